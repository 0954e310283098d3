import type { INestApplicationContext } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { type Contract, ContractFactory, id as topicOf, Wallet } from 'ethers';
import { TestSmartWalletArtifact } from '@lib/contracts';
import { createTestApp, TestApp } from '../support/app';
import { createAgent, pay, settleUntil, startRelayerWorker } from '../support/agents';
import { createKey, createOrg } from '../support/factories';
import { waitFor } from '../support/wait';
import { listenForMcp, McpClients, okTool, refusedTool } from '../support/mcp-client';
import { cliJson, createCheckout, createParties, fundOnChain, getCheckout, indexUntilStatus, Party, runCli, TestChain, USDC } from '../support/chain';
import { refundNonce, RefundsService } from '../../src/modules/refunds/refunds.service';
import { balanceTransactionId } from '../../src/modules/balance/balance-projector.service';
import { BalanceReconciler } from '../../src/modules/balance/balance-reconciler.service';

jest.setTimeout(180_000);

/**
 * Refunds of a released checkout (DESIGN §21), on the run's anvil with a relayer worker in this
 * process: the seller's signature path (relayed gaslessly) and its own transfer (txHash path), the
 * bound under concurrency, cancel, a reused or non-matching txHash, a reorg that removes a refund's
 * transfer, and an authorization that expires unused (last: it moves chain time a day ahead).
 */
describe('refunds of a released checkout (DESIGN §21)', () => {
  let t: TestApp;
  let chain: TestChain;
  let worker: INestApplicationContext;

  beforeAll(async () => {
    t = await createTestApp();
    chain = new TestChain();
    worker = await startRelayerWorker();
  });
  afterAll(async () => {
    await worker?.close();
    await t?.close();
    chain?.close();
  });

  /** Fresh parties and a checkout of `amount` funded and released on chain, indexed `released`. */
  async function released(amount = '25.00') {
    const { seller, buyer } = await createParties(t, chain);
    const checkout = await createCheckout(t, seller.org, { amount });
    await fundOnChain(t, chain, checkout.id, buyer.wallet);
    const funded = await indexUntilStatus(t, seller.org, checkout.id, 'funded');
    const escrow = (await t.http.get(`/api/v1/escrows/${funded.escrowId as string}`).set('X-Api-Key', seller.org.key)).body;
    await chain.act(buyer.wallet, 'release', escrow.chain.escrowKey as string);
    await indexUntilStatus(t, seller.org, checkout.id, 'released');
    return { seller, buyer, checkout };
  }

  const create = (seller: Party, checkoutId: string, body: object, key: string | null = randomUUID()) => {
    const req = t.http.post(`/api/v1/checkout-sessions/${checkoutId}/refunds`).set('X-Api-Key', seller.org.key);
    if (key) req.set('Idempotency-Key', key);
    return req.send(body);
  };
  const submit = (seller: Party, refundId: string, body: object, key = randomUUID()) =>
    t.http.post(`/api/v1/refunds/${refundId}/submit`).set('X-Api-Key', seller.org.key).set('Idempotency-Key', key).send(body);
  const getRefund = async (seller: Party, id: string) => (await t.http.get(`/api/v1/refunds/${id}`).set('X-Api-Key', seller.org.key).expect(200)).body;
  const sign = (wallet: Wallet, typedData: { domain: Record<string, unknown>; types: Record<string, Array<{ name: string; type: string }>>; message: Record<string, string> }) =>
    wallet.signTypedData(typedData.domain, typedData.types, typedData.message);
  const eventsOf = async (refundId: string) =>
    (
      (await t.dataSource.query(`SELECT type, data FROM outbox_events WHERE data->'object'->>'id' = $1 ORDER BY created_at, id`, [refundId])) as Array<{
        type: string;
        data: { object: { status: string } };
      }>
    ).map((e) => [e.type, e.data.object.status]);

  it('full refund by signature: typed data from the seller to the buyer, relayed gaslessly, succeeded; the buyer gets exactly 25.00 and the checkout stays released', async () => {
    const { seller, buyer, checkout } = await released('25.00');
    expect(await create(seller, checkout.id, { amount: '25.00' }, null).then((r) => [r.status, r.body.code])).toEqual([400, 'idempotency_required']);
    const res = await create(seller, checkout.id, { amount: '25', reason: 'customer asked', metadata: { ticket: 'T-1' } });
    expect(res.status).toBe(200);
    const refund = res.body;
    expect(refund).toMatchObject({
      status: 'requires_signature',
      amount: '25.00',
      currency: 'USDC',
      reason: 'customer asked',
      metadata: { ticket: 'T-1' },
      from: seller.wallet.address,
      to: buyer.wallet.address,
      source: { type: 'checkout_session', id: checkout.id },
      txHash: null,
    });
    const head = await chain.headTimestamp();
    expect(refund.typedData).toMatchObject({
      primaryType: 'TransferWithAuthorization',
      domain: { verifyingContract: chain.usdc.address, chainId: Number(process.env.CHAIN_ID) },
      message: { from: seller.wallet.address, to: buyer.wallet.address, value: '25000000', validAfter: '0' },
    });
    const validBefore = Number(refund.typedData.message.validBefore);
    expect(validBefore).toBeGreaterThan(head + 24 * 3600 - 120);
    expect(validBefore).toBeLessThanOrEqual(head + 24 * 3600);
    // The nonce is derived from the refund id.
    expect(refund.typedData.message.nonce).toBe(refundNonce(refund.id));

    // Nothing more can be created while it is outstanding (it counts before it is signed).
    const over = await create(seller, checkout.id, { amount: '0.01' });
    expect([over.status, over.body.code]).toEqual([409, 'refund_exceeds_amount']);
    expect(over.body.details).toMatchObject({ requested: '0.01', refundable: '0.00', received: '25.00' });

    // A signature by another wallet is refused before anything is stored.
    const stranger = await chain.wallet();
    const wrong = await submit(seller, refund.id, { signature: await sign(stranger, refund.typedData) });
    expect([wrong.status, wrong.body.code, wrong.body.details.reason]).toEqual([400, 'invalid_request', 'authorization_rejected']);
    expect((await getRefund(seller, refund.id)).status).toBe('requires_signature');

    const [buyer0, seller0] = await chain.balances(buyer.wallet.address, seller.wallet.address);
    const sellerEth0 = await chain.provider.getBalance(seller.wallet.address);
    const key = randomUUID();
    const signature = await sign(seller.wallet, refund.typedData);
    const done = await submit(seller, refund.id, { signature }, key);
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ id: refund.id, status: 'succeeded', txHash: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
    const [buyer1, seller1] = await chain.balances(buyer.wallet.address, seller.wallet.address);
    expect(buyer1 - buyer0).toBe(25n * USDC);
    expect(seller0 - seller1).toBe(25n * USDC);
    expect(await chain.provider.getBalance(seller.wallet.address)).toBe(sellerEth0); // gasless for the seller
    const receipt = await chain.provider.getTransactionReceipt(done.body.txHash);
    expect(receipt?.status).toBe(1);

    // The same key replays; the checkout shows the refunded amount and stays released.
    const replay = await submit(seller, refund.id, { signature }, key);
    expect(replay.status).toBe(200);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(await getCheckout(t, seller.org, checkout.id)).toMatchObject({ status: 'released', refundedAmount: '25.00' });
    expect(await eventsOf(refund.id)).toEqual([
      ['refund.created', 'requires_signature'],
      ['refund.updated', 'pending'],
      ['refund.succeeded', 'succeeded'],
    ]);
    // A succeeded refund cannot be cancelled.
    const cancel = await t.http.post(`/api/v1/refunds/${refund.id}/cancel`).set('X-Api-Key', seller.org.key).send();
    expect([cancel.status, cancel.body.details?.status]).toEqual([409, 'succeeded']);
    // Another organisation sees nothing.
    const other = (await createParties(t, chain)).seller;
    expect((await t.http.get(`/api/v1/refunds/${refund.id}`).set('X-Api-Key', other.org.key)).status).toBe(404);
    expect((await create(other, checkout.id, { amount: '1.00' })).status).toBe(404);
  });

  /** The organisation's ledger rows, newest first (GET /balance-transactions with a balance:read key). */
  const ledgerOf = async (organizationId: string) => {
    const key = await createKey(t.app, organizationId, ['balance:read']);
    const res = await t.http.get('/api/v1/balance-transactions').query({ limit: 100 }).set('X-Api-Key', key);
    expect(res.status).toBe(200);
    return res.body.data as Array<{ id: string; type: string; amount: string; fee: string; net: string; sourceType: string; sourceId: string; txHash: string; logIndex: number; blockNumber: number; blockTimestamp: string }>;
  };

  it('a succeeded refund is a negative refund row of the ledger, from its Transfer log: 25.00 released, 5.00 refunded → the statement adds up to 20.00 and reconciles with the chain', async () => {
    const { seller, checkout } = await released('25.00');
    const refund = (await create(seller, checkout.id, { amount: '5.00' }).expect(200)).body;
    // Nothing is written from the API call alone: no refund row before the money moved.
    expect((await ledgerOf(seller.org.organizationId)).map((r) => r.type)).toEqual(['escrow_release']);
    const done = await submit(seller, refund.id, { signature: await sign(seller.wallet, refund.typedData) });
    expect(done.body).toMatchObject({ status: 'succeeded' });
    const receipt = (await chain.provider.getTransactionReceipt(done.body.txHash))!;
    const transferTopic = topicOf('Transfer(address,address,uint256)');
    const transfer = receipt.logs.find((l) => l.address.toLowerCase() === chain.usdc.address.toLowerCase() && l.topics[0] === transferTopic)!;

    const rows = await ledgerOf(seller.org.organizationId);
    expect(rows.map((r) => [r.type, r.amount, r.net])).toEqual([
      ['refund', '-5.00', '-5.00'],
      ['escrow_release', '25.00', '25.00'],
    ]);
    expect(rows[0]).toMatchObject({
      id: balanceTransactionId(done.body.txHash, transfer.index),
      fee: '0.00',
      sourceType: 'refund',
      sourceId: refund.id,
      txHash: done.body.txHash,
      logIndex: transfer.index,
      blockNumber: receipt.blockNumber,
    });
    // The watcher's next passes change nothing (one row per Transfer log).
    await t.app.get(RefundsService).watchOnce();
    expect(await ledgerOf(seller.org.organizationId)).toEqual(rows);

    const from = new Date(Date.parse(rows[1].blockTimestamp) - 3_600_000).toISOString();
    const to = new Date(Date.parse(rows[0].blockTimestamp) + 3_600_000).toISOString();
    const key = await createKey(t.app, seller.org.organizationId, ['balance:read']);
    const csv = await t.http.get('/api/v1/balance-transactions/export').query({ from, to }).set('X-Api-Key', key).buffer(true).parse((res, cb) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString('utf8')));
      res.on('end', () => cb(null, text));
    });
    expect(csv.status).toBe(200);
    const lines = (csv.body as string).split('\r\n').filter((l) => l !== '');
    const header = lines[0].split(',');
    const records = lines.slice(1).map((l) => l.split(','));
    expect(records.map((r) => r[header.indexOf('type')])).toEqual(['escrow_release', 'refund']);
    const units = (text: string) => {
      const [whole, fraction = ''] = text.replace('-', '').split('.');
      return (text.startsWith('-') ? -1n : 1n) * (BigInt(whole) * USDC + BigInt(fraction.padEnd(6, '0')));
    };
    expect(records.reduce((sum, r) => sum + units(r[header.indexOf('net')]), 0n)).toBe(20n * USDC);

    // balance:reconcile's check: the refund row is the chain's Transfer log out of the seller's wallet.
    expect(await t.app.get(BalanceReconciler).check(seller.org.organizationId, new Date(from), new Date(to))).toMatchObject({
      rows: 2,
      ledger: '20.00',
      chain: '20.00',
      clean: true,
      mismatches: [],
    });
    // A Transfer without its row is reported too: the release's row, then the refund's, deleted (and put back).
    const reconciler = t.app.get(BalanceReconciler);
    for (const row of [rows[1], rows[0]]) {
      const [saved] = await t.dataSource.query(`SELECT * FROM balance_transactions WHERE id = $1`, [row.id]);
      await t.dataSource.query(`DELETE FROM balance_transactions WHERE id = $1`, [row.id]);
      let report: Awaited<ReturnType<BalanceReconciler['check']>>;
      let cli: Record<string, unknown> | null = null;
      try {
        report = await reconciler.check(seller.org.organizationId, new Date(from), new Date(to));
        // The operator's command reports it the same way (the CLI loads the writers' rules too).
        if (row.type === 'refund') cli = cliJson(await runCli(['balance:reconcile', '--org', seller.org.organizationId, '--from', from, '--to', to, '--json']));
      } finally {
        const cols = Object.keys(saved);
        await t.dataSource.query(`INSERT INTO balance_transactions (${cols.join(', ')}) VALUES (${cols.map((_, i) => `$${i + 1}`).join(', ')})`, cols.map((c) => saved[c]));
      }
      expect(report).toMatchObject({ clean: false, rows: 1, chain: '20.00', mismatches: [{ kind: 'log_without_row', id: row.id, txHash: row.txHash, logIndex: row.logIndex }] });
      expect(report.mismatches[0].expected).toContain(`${row.type} row of ${row.amount}`);
      if (row.type === 'refund') expect(cli).toMatchObject({ clean: false, mismatches: [{ kind: 'log_without_row', id: row.id }] });
    }
    expect(await reconciler.check(seller.org.organizationId, new Date(from), new Date(to))).toMatchObject({ rows: 2, clean: true, mismatches: [] });
  });

  it('partial refunds by txHash: the seller sends its own transfers; each verified on chain; a reused or non-matching txHash is 400; cancel only while requires_signature', async () => {
    const { seller, buyer, checkout } = await released('25.00');
    const a = (await create(seller, checkout.id, { amount: '5.00' }).expect(200)).body;
    const b = (await create(seller, checkout.id, { amount: '7.50' }).expect(200)).body;
    const buyer0 = await chain.usdcBalance(buyer.wallet.address);

    // A transfer of the wrong amount, and one to someone else, do not match.
    const wrongAmount = await chain.usdcTransfer(seller.wallet, buyer.wallet.address, 4n * USDC);
    const bad = await submit(seller, a.id, { txHash: wrongAmount });
    expect([bad.status, bad.body.code, bad.body.details.reason]).toEqual([400, 'invalid_request', 'no_matching_transfer']);
    const notUsdc = (await chain.mined(seller.wallet.sendTransaction({ to: buyer.wallet.address, value: 1n }), 'ETH transfer')).hash;
    expect((await submit(seller, a.id, { txHash: notUsdc })).body.details.reason).toBe('wrong_token');
    expect((await submit(seller, a.id, { txHash: '0x' + 'ab'.repeat(32) })).body.details.reason).toBe('not_found');
    expect((await submit(seller, a.id, {})).status).toBe(400);

    const tx = await chain.usdcTransfer(seller.wallet, buyer.wallet.address, 5n * USDC);
    const ok = await submit(seller, a.id, { txHash: tx });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ status: 'succeeded', txHash: tx.toLowerCase(), typedData: null });
    // The same transfer for a second refund of the same amount is refused.
    const c = (await create(seller, checkout.id, { amount: '5.00' }).expect(200)).body;
    const reused = await submit(seller, c.id, { txHash: tx });
    expect([reused.status, reused.body.code, reused.body.details.reason]).toEqual([400, 'invalid_request', 'tx_already_used']);

    const tx2 = await chain.usdcTransfer(seller.wallet, buyer.wallet.address, 7_500_000n);
    expect((await submit(seller, b.id, { txHash: tx2 })).body.status).toBe('succeeded');
    expect((await chain.usdcBalance(buyer.wallet.address)) - buyer0).toBe(12_500_000n + 4n * USDC);

    // c is still requires_signature: it can be cancelled once, which frees its 5.00.
    const cancel = await t.http.post(`/api/v1/refunds/${c.id}/cancel`).set('X-Api-Key', seller.org.key).send();
    expect(cancel.status).toBe(200);
    expect(cancel.body.status).toBe('cancelled');
    const again = await t.http.post(`/api/v1/refunds/${c.id}/cancel`).set('X-Api-Key', seller.org.key).send();
    expect([again.status, again.body.details.status, again.body.details.allowed]).toEqual([409, 'cancelled', ['requires_signature']]);
    expect((await submit(seller, c.id, { txHash: tx2 })).status).toBe(409);
    // What is left: 25.00 − 12.50 = 12.50, exactly.
    expect((await create(seller, checkout.id, { amount: '12.51' })).body.code).toBe('refund_exceeds_amount');
    expect((await create(seller, checkout.id, { amount: '12.50' })).status).toBe(200);
    expect(await getCheckout(t, seller.org, checkout.id)).toMatchObject({ status: 'released', refundedAmount: '12.50' });

    const list = await t.http.get('/api/v1/refunds').query({ limit: 2 }).set('X-Api-Key', seller.org.key).expect(200);
    expect(list.body.data).toHaveLength(2);
    expect(list.body.hasMore).toBe(true);
    const rest = await t.http.get('/api/v1/refunds').query({ starting_after: list.body.nextCursor }).set('X-Api-Key', seller.org.key).expect(200);
    expect([...list.body.data, ...rest.body.data].map((r: { id: string }) => r.id)).toHaveLength(4);
    expect((await t.http.get('/api/v1/refunds').query({ status: 'succeeded' }).set('X-Api-Key', seller.org.key)).body.data.map((r: { id: string }) => r.id).sort()).toEqual(
      [a.id, b.id].sort(),
    );
  });

  it('only a released checkout is refundable (409 not_refundable)', async () => {
    const { seller, buyer } = await createParties(t, chain);
    const checkout = await createCheckout(t, seller.org, { amount: '10.00' });
    expect((await create(seller, checkout.id, { amount: '1.00' })).body).toMatchObject({ code: 'not_refundable', details: { status: 'open' } });
    await fundOnChain(t, chain, checkout.id, buyer.wallet);
    await indexUntilStatus(t, seller.org, checkout.id, 'funded');
    const res = await create(seller, checkout.id, { amount: '1.00' });
    expect([res.status, res.body.code, res.body.details.status]).toEqual([409, 'not_refundable', 'funded']);
  });

  it('20 concurrent creates of 2.00 on a 25.00 checkout: exactly 12 are created, 8 refused refund_exceeds_amount', async () => {
    const { seller, checkout } = await released('25.00');
    const results = await Promise.all(Array.from({ length: 20 }, () => create(seller, checkout.id, { amount: '2.00' })));
    const created = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status === 409);
    expect(created).toHaveLength(12);
    expect(refused).toHaveLength(8);
    for (const r of refused) expect(r.body.code).toBe('refund_exceeds_amount');
    const [{ total }] = await t.dataSource.query(`SELECT sum(amount_units)::text AS total FROM refunds WHERE source_id = $1`, [checkout.id]);
    expect(total).toBe('24000000');
  });

  it('a reorg that removes a refund transfer takes the refund back to pending (refund.updated); it succeeds again once the transfer is mined again', async () => {
    const { seller, buyer, checkout } = await released('25.00');
    const refund = (await create(seller, checkout.id, { amount: '3.00' }).expect(200)).body;
    const snapshot = await chain.snapshot();
    // The seller signs its transfer once, so the same bytes can be mined again after the reorg.
    const raw = await seller.wallet.signTransaction(await seller.wallet.populateTransaction({ to: chain.usdc.address, data: chain.usdc.encodeTransfer(buyer.wallet.address, 3n * USDC) }));
    const tx = await chain.provider.broadcastTransaction(raw).then((r) => r.hash);
    await chain.provider.waitForTransaction(tx);
    expect((await submit(seller, refund.id, { txHash: tx })).body.status).toBe('succeeded');
    const [row] = (await ledgerOf(seller.org.organizationId)).filter((r) => r.type === 'refund');
    expect(row).toMatchObject({ amount: '-3.00', sourceId: refund.id, txHash: tx.toLowerCase() });
    await chain.revert(snapshot);
    // The fault happened: the node no longer has the transfer.
    expect(await chain.provider.getTransactionReceipt(tx)).toBeNull();
    await t.app.get(RefundsService).watchOnce();
    expect(await getRefund(seller, refund.id)).toMatchObject({ status: 'pending', txHash: tx.toLowerCase() });
    expect((await getCheckout(t, seller.org, checkout.id)).refundedAmount).toBe('0.00');
    // Its ledger row went with it (the release's row stays).
    expect((await ledgerOf(seller.org.organizationId)).map((r) => r.type)).toEqual(['escrow_release']);
    // The same signed transfer is mined again (a new block).
    await chain.provider.broadcastTransaction(raw);
    await chain.provider.waitForTransaction(tx);
    await t.app.get(RefundsService).watchOnce();
    expect(await getRefund(seller, refund.id)).toMatchObject({ status: 'succeeded', txHash: tx.toLowerCase() });
    expect((await getCheckout(t, seller.org, checkout.id)).refundedAmount).toBe('3.00');
    // The row again, under the same id (derived from the tx hash and log index), at the new block.
    const [again] = (await ledgerOf(seller.org.organizationId)).filter((r) => r.type === 'refund');
    expect(again).toMatchObject({ id: row.id, amount: '-3.00', txHash: tx.toLowerCase() });
    expect(again.blockNumber).toBe((await chain.provider.getTransactionReceipt(tx))!.blockNumber);
    expect(await eventsOf(refund.id)).toEqual([
      ['refund.created', 'requires_signature'],
      ['refund.succeeded', 'succeeded'],
      ['refund.updated', 'pending'],
      ['refund.succeeded', 'succeeded'],
    ]);
  });

  // With REFUND_REMINE_S=3 on its own app: the 24 h "mined again" window is wall-clock seconds after the
  // reorg was seen, so the test waits 3 s of real time and the shared chain's clock does not move at all.
  it('a txHash refund whose transfer a reorg removed and that is not mined again within REFUND_REMINE_S ends failed (refund.failed, reorged) and frees its amount', async () => {
    const shared = t;
    t = await createTestApp({ REFUND_REMINE_S: '3' });
    try {
      const { seller, buyer, checkout } = await released('25.00');
      const refund = (await create(seller, checkout.id, { amount: '25.00' }).expect(200)).body;
      const snapshot = await chain.snapshot();
      const tx = await chain.usdcTransfer(seller.wallet, buyer.wallet.address, 25n * USDC);
      expect((await submit(seller, refund.id, { txHash: tx })).body.status).toBe('succeeded');
      expect((await ledgerOf(seller.org.organizationId)).map((r) => r.type)).toEqual(['refund', 'escrow_release']);
      await chain.revert(snapshot);
      // The fault happened: the transfer is gone from the node (and not in its pool to be mined again).
      expect(await chain.provider.getTransactionReceipt(tx)).toBeNull();
      expect(await chain.provider.getTransaction(tx)).toBeNull();
      const watcher = t.app.get(RefundsService);
      await watcher.watchOnce();
      expect(await getRefund(seller, refund.id)).toMatchObject({ status: 'pending', txHash: tx.toLowerCase() });
      // While pending it still counts against the bound.
      expect((await create(seller, checkout.id, { amount: '0.01' })).body.code).toBe('refund_exceeds_amount');
      // Not mined again within the window: failed, once.
      await waitFor(
        async () => {
          await watcher.watchOnce();
          return (await getRefund(seller, refund.id)).status === 'failed';
        },
        { label: 'the reorged txHash refund fails after REFUND_REMINE_S', timeoutMs: 30_000, intervalMs: 250 },
      );
      expect(await getRefund(seller, refund.id)).toMatchObject({ status: 'failed', failureReason: 'reorged', txHash: tx.toLowerCase() });
      expect(await eventsOf(refund.id)).toEqual([
        ['refund.created', 'requires_signature'],
        ['refund.succeeded', 'succeeded'],
        ['refund.updated', 'pending'],
        ['refund.failed', 'failed'],
      ]);
      await watcher.watchOnce();
      expect((await eventsOf(refund.id)).length).toBe(4);
      expect((await getCheckout(t, seller.org, checkout.id)).refundedAmount).toBe('0.00');
      expect((await ledgerOf(seller.org.organizationId)).map((r) => r.type)).toEqual(['escrow_release']);
      // Its amount is free again: the whole 25.00 can be refunded anew.
      expect((await create(seller, checkout.id, { amount: '25.00' })).status).toBe(200);
    } finally {
      await t.close();
      t = shared;
    }
  });

  it('ERC-1271: a seller whose payout wallet is a contract wallet refunds by signature; its key holder signs the same typed data and TestUSDC asks the wallet (isValidSignature)', async () => {
    const keyHolder = new Wallet(Wallet.createRandom().privateKey);
    const deployer = await chain.wallet();
    const contract = (await (await new ContractFactory(TestSmartWalletArtifact.abi, TestSmartWalletArtifact.bytecode, deployer).deploy(keyHolder.address)).waitForDeployment()) as Contract;
    const walletAddress = await contract.getAddress();
    const buyerWallet = await chain.wallet({ usdc: 100n * USDC });
    const seller: Party = { wallet: keyHolder, org: await createOrg(t.app, { payoutAddress: walletAddress }) };
    const checkout = await createCheckout(t, seller.org, { amount: '10.00' });
    await fundOnChain(t, chain, checkout.id, buyerWallet);
    const funded = await indexUntilStatus(t, seller.org, checkout.id, 'funded');
    const escrow = (await t.http.get(`/api/v1/escrows/${funded.escrowId as string}`).set('X-Api-Key', seller.org.key)).body;
    await chain.act(buyerWallet, 'release', escrow.chain.escrowKey as string);
    await indexUntilStatus(t, seller.org, checkout.id, 'released');
    expect(await chain.usdcBalance(walletAddress)).toBe(10n * USDC);

    const refund = (await create(seller, checkout.id, { amount: '4.00' }).expect(200)).body;
    expect(refund).toMatchObject({ from: walletAddress, to: buyerWallet.address, typedData: { message: { from: walletAddress, value: '4000000' } } });
    // A key the wallet does not accept is refused before anything is stored.
    const wrong = await submit(seller, refund.id, { signature: await sign(new Wallet(Wallet.createRandom().privateKey), refund.typedData) });
    expect([wrong.status, wrong.body.details.reason]).toEqual([400, 'authorization_rejected']);
    // USDC's transferWithAuthorization takes (v, r, s): a longer contract-wallet signature (a multisig's) is refused, pointing to the txHash path.
    const long = await submit(seller, refund.id, { signature: '0x' + 'ab'.repeat(130) });
    expect([long.status, long.body.details.reason]).toEqual([400, 'invalid_signature']);
    expect(JSON.stringify(long.body)).toContain('submits {txHash}');
    const buyer0 = await chain.usdcBalance(buyerWallet.address);
    const done = await submit(seller, refund.id, { signature: await sign(keyHolder, refund.typedData) });
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ status: 'succeeded', txHash: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
    expect((await chain.usdcBalance(buyerWallet.address)) - buyer0).toBe(4n * USDC);
    expect(await chain.usdcBalance(walletAddress)).toBe(6n * USDC);
    expect(await getCheckout(t, seller.org, checkout.id)).toMatchObject({ status: 'released', refundedAmount: '4.00' });
    // The ledger: the release into the contract wallet and the refund out of it.
    expect((await ledgerOf(seller.org.organizationId)).map((r) => [r.type, r.amount])).toEqual([
      ['refund', '-4.00'],
      ['escrow_release', '10.00'],
    ]);
  });

  it('a refund created on a branch a reorg removed settles from the new chain: its transfer mined below its creation block is found (chaos finding)', async () => {
    const { seller, buyer, checkout } = await released('25.00');
    const snapshot = await chain.snapshot();
    await chain.mine(3);
    // Created at the head of blocks a reorg then removes: its creation block lies above the new chain's head.
    const refund = (await create(seller, checkout.id, { amount: '2.00' }).expect(200)).body;
    await chain.revert(snapshot);
    const buyer0 = await chain.usdcBalance(buyer.wallet.address);
    const done = await submit(seller, refund.id, { signature: await sign(seller.wallet, refund.typedData) });
    expect(done.status).toBe(200);
    expect((await chain.usdcBalance(buyer.wallet.address)) - buyer0).toBe(2n * USDC);
    const watcher = t.app.get(RefundsService);
    await waitFor(
      async () => {
        await watcher.watchOnce();
        return (await getRefund(seller, refund.id)).status === 'succeeded';
      },
      { label: 'the refund mined below its creation block succeeds', timeoutMs: 20_000, intervalMs: 250 },
    );
    expect(await getCheckout(t, seller.org, checkout.id)).toMatchObject({ refundedAmount: '2.00' });
  });

  it('an instant agent payment this organisation received: its payee reads it (read-only) and refunds part by signature to the agent signer', async () => {
    const payeeWallet = await chain.wallet();
    const handle = `shop-${randomUUID().slice(0, 8)}`;
    const payee: Party = { wallet: payeeWallet, org: await createOrg(t.app, { payoutAddress: payeeWallet.address, handle }) };
    const agent = await createAgent(t, chain, { float: 50n * USDC, policy: { dailyLimit: '100.00' } });
    const paid = await pay(t, agent, { to: handle, amount: '10.00' });
    expect(paid.status).toBe(200);
    const paymentId = paid.body.id as string;
    const refundPayment = (body: object) => t.http.post(`/api/v1/payments/${paymentId}/refunds`).set('X-Api-Key', payee.org.key).set('Idempotency-Key', randomUUID()).send(body);
    // Not received yet until it succeeded on chain (the indexer may already have seen it).
    await settleUntil(t, async () => (await t.http.get(`/api/v1/payments/${paymentId}`).set('X-Api-Key', agent.key)).body.status === 'succeeded');
    const seen = await t.http.get(`/api/v1/payments/${paymentId}`).set('X-Api-Key', payee.org.key);
    expect(seen.status).toBe(200);
    expect(seen.body).toMatchObject({ id: paymentId, status: 'succeeded', amount: '10.00', toAddress: payeeWallet.address, refundedAmount: '0.00' });
    // Another organisation (or the payer's organisation with a merchant key) does not see it.
    const stranger = await createOrg(t.app);
    expect((await t.http.get(`/api/v1/payments/${paymentId}`).set('X-Api-Key', stranger.key)).status).toBe(404);
    expect((await t.http.post(`/api/v1/payments/${paymentId}/refunds`).set('X-Api-Key', stranger.key).set('Idempotency-Key', randomUUID()).send({ amount: '1.00' })).status).toBe(404);

    const refund = (await refundPayment({ amount: '4.00' }).expect(200)).body;
    expect(refund).toMatchObject({ status: 'requires_signature', from: payeeWallet.address, to: agent.signerAddress, source: { type: 'payment', id: paymentId } });
    expect((await refundPayment({ amount: '6.01' })).body.code).toBe('refund_exceeds_amount');
    const signer0 = await chain.usdcBalance(agent.signerAddress);
    const done = await submit(payee, refund.id, { signature: await sign(payeeWallet, refund.typedData) });
    expect(done.body.status).toBe('succeeded');
    expect((await chain.usdcBalance(agent.signerAddress)) - signer0).toBe(4n * USDC);
    expect((await t.http.get(`/api/v1/payments/${paymentId}`).set('X-Api-Key', payee.org.key)).body.refundedAmount).toBe('4.00');
  });

  it('the watcher settles a refund from the chain whatever the API heard: the seller sends its signed authorization itself', async () => {
    const { seller, buyer, checkout } = await released('25.00');
    const refund = (await create(seller, checkout.id, { amount: '2.00' }).expect(200)).body;
    const signature = await sign(seller.wallet, refund.typedData);
    const m = refund.typedData.message;
    const buyer0 = await chain.usdcBalance(buyer.wallet.address);
    await chain.senders.broadcastSignedTx(
      await seller.wallet.signTransaction(
        await seller.wallet.populateTransaction({
          to: chain.usdc.address,
          data: chain.usdc.encodeTransferWithAuthorization({ from: m.from, to: m.to, value: BigInt(m.value), validAfter: 0n, validBefore: BigInt(m.validBefore), nonce: m.nonce, signature }),
        }),
      ),
    );
    await waitFor(async () => (await chain.usdcBalance(buyer.wallet.address)) - buyer0 === 2n * USDC, { label: 'transfer mined' });
    // Before the watcher saw it, reconciliation reports the refund's Transfer without its ledger row (its status still says requires_signature).
    const now = (await chain.headTimestamp()) * 1000;
    const [from, to] = [new Date(now - 3_600_000), new Date(now + 3_600_000)];
    const reconciler = t.app.get(BalanceReconciler);
    const early = await reconciler.check(seller.org.organizationId, from, to);
    expect(early).toMatchObject({ clean: false, ledger: '25.00', chain: '23.00' });
    expect(early.mismatches).toEqual([expect.objectContaining({ kind: 'log_without_row', expected: expect.stringContaining(`refund row of -2.00 (refund ${refund.id})`) })]);
    await t.app.get(RefundsService).watchOnce();
    expect(await reconciler.check(seller.org.organizationId, from, to)).toMatchObject({ clean: true, ledger: '23.00', chain: '23.00', mismatches: [] });
    expect(await getRefund(seller, refund.id)).toMatchObject({ status: 'succeeded', txHash: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
    expect((await eventsOf(refund.id)).map(([type]) => type)).toEqual(['refund.created', 'refund.succeeded']);
  });

  it('MCP: the same Idempotency-Key on REST and svc_refund_create is one refund; svc_refund_get/list/submit/cancel name the same operations', async () => {
    const { seller, checkout } = await released('25.00');
    const clients = new McpClients(() => mcpUrl);
    const mcpUrl = await listenForMcp(t);
    try {
      const mcp = await clients.asKey(seller.org.key);
      const key = randomUUID();
      const rest = (await create(seller, checkout.id, { amount: '3.00', reason: 'dup' }, key).expect(200)).body;
      const viaMcp = await okTool(mcp, 'svc_refund_create', { checkoutSessionId: checkout.id, amount: '3.00', reason: 'dup', idempotencyKey: key });
      expect(viaMcp.id).toBe(rest.id);
      const [{ n }] = await t.dataSource.query(`SELECT count(*)::int AS n FROM refunds WHERE source_id = $1`, [checkout.id]);
      expect(n).toBe(1);
      // The other way round: MCP first, then REST.
      const key2 = randomUUID();
      const first = await okTool(mcp, 'svc_refund_create', { checkoutSessionId: checkout.id, amount: '2.00', idempotencyKey: key2 });
      expect((await create(seller, checkout.id, { amount: '2.00' }, key2).expect(200)).body.id).toBe(first.id);
      // The same key with other arguments is refused on either transport.
      await refusedTool(mcp, 'svc_refund_create', { checkoutSessionId: checkout.id, amount: '2.50', idempotencyKey: key2 }, 'idempotency_conflict');
      await refusedTool(mcp, 'svc_refund_create', { checkoutSessionId: checkout.id, amount: '2.00' }, 'idempotency_required');
      await refusedTool(mcp, 'svc_refund_create', { checkoutSessionId: checkout.id, amount: '21.00', idempotencyKey: randomUUID() }, 'refund_exceeds_amount');

      expect((await okTool(mcp, 'svc_refund_get', { id: rest.id })).status).toBe('requires_signature');
      expect(((await okTool(mcp, 'svc_refund_list', { limit: 10 })).data as unknown[]).length).toBe(2);
      expect((await okTool(mcp, 'svc_refund_cancel', { id: first.id })).status).toBe('cancelled');
      await refusedTool(mcp, 'svc_refund_cancel', { id: first.id }, 'invalid_request');
      const signature = await sign(seller.wallet, rest.typedData);
      expect((await okTool(mcp, 'svc_refund_submit', { id: rest.id, signature, idempotencyKey: randomUUID() })).status).toBe('succeeded');
      expect(await getCheckout(t, seller.org, checkout.id)).toMatchObject({ refundedAmount: '3.00' });
    } finally {
      await clients.closeAll();
    }
  });

  it('a submit re-checks the bound under the source lock: after a reorg removed the release, a valid signature is refused 409 not_refundable and nothing moves', async () => {
    const { seller, buyer } = await createParties(t, chain);
    const checkout = await createCheckout(t, seller.org, { amount: '10.00' });
    await fundOnChain(t, chain, checkout.id, buyer.wallet);
    const funded = await indexUntilStatus(t, seller.org, checkout.id, 'funded');
    const escrow = (await t.http.get(`/api/v1/escrows/${funded.escrowId as string}`).set('X-Api-Key', seller.org.key)).body;
    const snapshot = await chain.snapshot();
    await chain.act(buyer.wallet, 'release', escrow.chain.escrowKey as string);
    await indexUntilStatus(t, seller.org, checkout.id, 'released');
    const refund = (await create(seller, checkout.id, { amount: '10.00' }).expect(200)).body;
    const signature = await sign(seller.wallet, refund.typedData);
    await chain.revert(snapshot);
    // The fault happened: the seller no longer holds the released money; the indexer unwinds the release.
    expect(await chain.usdcBalance(seller.wallet.address)).toBe(0n);
    await chain.mine(2);
    await indexUntilStatus(t, seller.org, checkout.id, 'funded');
    // Other money in the seller's wallet makes the authorization itself usable on chain: only the bound refuses it.
    await chain.mintUsdc(seller.wallet.address, 10n * USDC);
    const res = await submit(seller, refund.id, { signature });
    expect([res.status, res.body.code, res.body.details?.status]).toEqual([409, 'not_refundable', 'funded']);
    expect((await getRefund(seller, refund.id)).status).toBe('requires_signature');
    expect(await chain.usdcBalance(seller.wallet.address)).toBe(10n * USDC);
  });

  // With REFUND_VALIDITY_S=300 on its own app, so the shared chain's clock moves 6 minutes, not a day
  // (every later file's funding terms are dated by wall-clock time).
  it('an authorization that expires unused ends failed (refund.failed) and frees its amount; its signature is then refused', async () => {
    const shared = t;
    t = await createTestApp({ REFUND_VALIDITY_S: '300' });
    try {
      await expiresUnused();
    } finally {
      await t.close();
      t = shared;
    }
  });
  async function expiresUnused() {
    const { seller, checkout } = await released('25.00');
    const refund = (await create(seller, checkout.id, { amount: '25.00' }).expect(200)).body;
    const signature = await sign(seller.wallet, refund.typedData);
    expect((await create(seller, checkout.id, { amount: '1.00' })).body.code).toBe('refund_exceeds_amount');
    const watcher = t.app.get(RefundsService);
    await watcher.watchOnce();
    expect((await getRefund(seller, refund.id)).status).toBe('requires_signature');
    expect(refund.typedData.message.validBefore - (await chain.headTimestamp())).toBeLessThanOrEqual(300);
    await chain.increaseTime(300 + 60);
    await watcher.watchOnce();
    expect(await getRefund(seller, refund.id)).toMatchObject({ status: 'failed', failureReason: 'expired' });
    expect((await eventsOf(refund.id)).at(-1)).toEqual(['refund.failed', 'failed']);
    const late = await submit(seller, refund.id, { signature });
    expect([late.status, late.body.details.status]).toEqual([409, 'failed']);
    expect((await create(seller, checkout.id, { amount: '25.00' })).status).toBe(200);
  }
});
