import type { INestApplicationContext } from '@nestjs/common';
import { Interface, parseEther, toBeHex, Transaction, Wallet } from 'ethers';
import { TestUSDCArtifact } from '@lib/contracts';
import { x402Client } from '@x402/core/client';
import { decodePaymentRequiredHeader } from '@x402/core/http';
import { ExactEvmScheme as ClientExactEvmScheme } from '@x402/evm/exact/client';
import { privateKeyToAccount } from 'viem/accounts';
import { metricsRegistry } from '../../src/common/metrics';
import { RelayerProcessor } from '../../src/chain/relayer/relayer.worker.module';
import { RelayerService } from '../../src/chain/relayer/relayer.service';
import { RelayerSender, RelayerUnderpricedError, RelayerUnfundedError } from '../../src/chain/relayer/relayer-sender.service';
import { v7 as uuidv7 } from 'uuid';
import { startRelayerWorker } from '../support/agents';
import { createTestApp, TestApp } from '../support/app';
import { createPayee } from '../support/agents';
import { checkoutEvents, createCheckout, createParties, indexUntilStatus, Party, TestChain, USDC } from '../support/chain';
import { expectError } from '../support/errors';
import { waitFor } from '../support/wait';

jest.setTimeout(180_000);

const USDC_IFACE = new Interface(TestUSDCArtifact.abi);

type TypedData = { domain: Record<string, unknown>; types: Record<string, Array<{ name: string; type: string }>>; primaryType: string; message: Record<string, unknown> };

interface RelayRow {
  id: string;
  nonce: string | null;
  status: string;
  purpose: string;
  tx_hash: string | null;
  tx_hashes: string[];
  mined_tx_hash: string | null;
  replacements: number;
  filled_by: string | null;
  error: string | null;
}

/**
 * The relayer on a chain that behaves like a public one (DESIGN §18 "Relayer", issue 22): mining
 * stopped (`evm_setAutomine false`), a base-fee spike that strands a transaction, transactions the
 * node drops, and a relayer without gas money. The worker's tender runs on its schedule with
 * RELAYER_BUMP_AFTER_S=1; every test restores automine and the relayer's balance in `finally`.
 */
describe('relayer on a public-like chain: fee bumps, drops and low balance', () => {
  let t: TestApp;
  let chain: TestChain;
  let worker: INestApplicationContext;
  let seller: Party;

  beforeAll(async () => {
    t = await createTestApp();
    chain = new TestChain();
    const saved = { RELAYER_BUMP_AFTER_S: process.env.RELAYER_BUMP_AFTER_S, CHAIN_POLL_MS: process.env.CHAIN_POLL_MS };
    Object.assign(process.env, { RELAYER_BUMP_AFTER_S: '1', CHAIN_POLL_MS: '200' });
    try {
      worker = await startRelayerWorker();
    } finally {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
    ({ seller } = await createParties(t, chain, 0n));
  });
  afterAll(async () => {
    await chain?.rpc('evm_setAutomine', [true]).catch(() => undefined);
    chain?.close();
    await worker?.close();
    await t?.close();
  });

  const automine = (on: boolean) => chain.rpc('evm_setAutomine', [on]);
  const mineOne = () => chain.rpc('evm_mine');
  const relayRow = async (id: string): Promise<RelayRow> => (await t.dataSource.query(`SELECT * FROM relayer_transactions WHERE id = $1`, [id]))[0];
  const fundingRelayRows = async (checkoutId: string): Promise<RelayRow[]> =>
    t.dataSource.query(`SELECT r.* FROM relayer_transactions r JOIN checkout_relays c ON r.reference = c.id::text WHERE c.checkout_session_id = $1`, [checkoutId]);

  async function signedFunding(checkoutId: string, buyer: Wallet) {
    const res = await t.http.get(`/checkout/${checkoutId}/funding`).query({ buyer: buyer.address });
    expect(res.status).toBe(200);
    const typedData = res.body.typedData as TypedData;
    const types = Object.fromEntries(Object.entries(typedData.types).filter(([k]) => k !== 'EIP712Domain'));
    const m = typedData.message as Record<string, string>;
    return { buyer: buyer.address, validAfter: m.validAfter, validBefore: m.validBefore, nonce: m.nonce, signature: await buyer.signTypedData(typedData.domain, types, typedData.message) };
  }

  it('a base-fee spike strands a funding; the tender replaces it at the same nonce with fees +12.5 %, one hash is mined, the checkout is funded once', async () => {
    const checkout = await createCheckout(t, seller.org, { amount: '4.00' });
    const buyer = await chain.wallet({ usdc: 10n * USDC, eth: false });
    const body = await signedFunding(checkout.id, buyer);
    let row: RelayRow;
    await automine(false);
    try {
      const relayed = await t.http.post(`/checkout/${checkout.id}/relay`).send(body);
      expect(relayed.status).toBe(200);
      expect(relayed.body.status).toBe('broadcast');
      const first = Transaction.from((await chain.provider.getTransaction(relayed.body.txHash))!);
      // The next block's base fee above the transaction's maxFeePerGas: it cannot be included.
      await chain.rpc('anvil_setNextBlockBaseFeePerGas', [toBeHex(first.maxFeePerGas! * 4n)]);
      await mineOne();
      expect(await chain.provider.getTransactionReceipt(relayed.body.txHash)).toBeNull();

      [row] = await fundingRelayRows(checkout.id);
      row = await waitFor(async () => ((row = await relayRow(row.id)).replacements >= 1 ? row : null), { label: 'a fee bump', describe: () => row });
      const bump = Transaction.from((await chain.provider.getTransaction(row.tx_hash!))!);
      expect(bump.nonce).toBe(first.nonce);
      expect(bump.maxFeePerGas! * 1000n).toBeGreaterThanOrEqual(first.maxFeePerGas! * 1125n);
      expect(bump.maxPriorityFeePerGas! * 1000n).toBeGreaterThanOrEqual(first.maxPriorityFeePerGas! * 1125n);
      expect(row.tx_hashes[0]).toBe(relayed.body.txHash);
      expect(row.tx_hashes).toContain(row.tx_hash);

      await mineOne();
      row = await waitFor(async () => ((row = await relayRow(row.id)).mined_tx_hash ? row : null), { label: 'the mined hash recorded', describe: () => row });
    } finally {
      await automine(true);
    }
    expect(row.tx_hashes.length).toBeGreaterThanOrEqual(2);
    expect(row.tx_hashes).toContain(row.mined_tx_hash);
    expect(row.mined_tx_hash).not.toBe(row.tx_hashes[0]);
    expect((await chain.provider.getTransactionReceipt(row.mined_tx_hash!))!.status).toBe(1);
    // Every other signed hash of the row was never mined.
    for (const h of row.tx_hashes.filter((x) => x !== row.mined_tx_hash)) expect(await chain.provider.getTransactionReceipt(h)).toBeNull();
    await indexUntilStatus(t, seller.org, checkout.id, 'funded');
    expect(await chain.usdcBalance(buyer.address)).toBe(6n * USDC);
    expect((await checkoutEvents(t, checkout.id)).map((e) => e.type)).toEqual(['checkout.funded']);
    // A caller waiting on the relay sees the replacement's receipt.
    const receipt = await t.app.get(RelayerService).waitMined(row.id, 5_000);
    expect(receipt?.hash).toBe(row.mined_tx_hash);
  });

  it("a relay sent after a base-fee spike is priced for the block it can enter (the pending block's base fee), not the last one: accepted and mined once", async () => {
    const checkout = await createCheckout(t, seller.org, { amount: '1.50' });
    const buyer = await chain.wallet({ usdc: 5n * USDC, eth: false });
    const body = await signedFunding(checkout.id, buyer);
    const spiked = 30n * 10n ** 9n; // 30 gwei, under RELAYER_MAX_FEE_GWEI (100)
    await automine(false);
    try {
      await chain.rpc('anvil_setNextBlockBaseFeePerGas', [toBeHex(spiked)]);
      // Before: fees from the latest block (base fee × 2 + tip, a few gwei): the node refused the broadcast
      // ("max fee per gas less than block base fee"), the relay was failed and the buyer got 400 "rejected".
      const relayed = await t.http.post(`/checkout/${checkout.id}/relay`).send(body);
      expect(relayed.status).toBe(200);
      expect(relayed.body.status).toBe('broadcast');
      expect(Transaction.from((await chain.provider.getTransaction(relayed.body.txHash))!).maxFeePerGas!).toBeGreaterThanOrEqual(spiked);
      await mineOne();
      expect((await chain.provider.getTransactionReceipt(relayed.body.txHash))!.status).toBe(1);
    } finally {
      await automine(true);
    }
    await indexUntilStatus(t, seller.org, checkout.id, 'funded');
    expect(await chain.usdcBalance(buyer.address)).toBe(3_500_000n);
  });

  it('a base fee above RELAYER_MAX_FEE_GWEI delays a relay and never fails it: the row stays queued, the buyer is told it is reserved, the same request sends it once fees fall', async () => {
    const checkout = await createCheckout(t, seller.org, { amount: '2.50' });
    const buyer = await chain.wallet({ usdc: 5n * USDC, eth: false });
    const body = await signedFunding(checkout.id, buyer);
    const capGwei = Number(process.env.RELAYER_MAX_FEE_GWEI ?? '100');
    await automine(false);
    let relayTxId: string;
    try {
      await chain.rpc('anvil_setNextBlockBaseFeePerGas', [toBeHex(BigInt(capGwei + 50) * 10n ** 9n)]);
      const first = await t.http.post(`/checkout/${checkout.id}/relay`).send(body);
      expect(first.status).toBe(200);
      expect(first.body).toMatchObject({ status: 'reserved', txHash: null });
      const [row] = await fundingRelayRows(checkout.id);
      relayTxId = row.id;
      // Not failed, nothing signed that the node holds: queued without a nonce, for a later send.
      expect(row).toMatchObject({ status: 'queued', nonce: null, tx_hash: null });
      await expect(worker.get(RelayerSender).send(row.id)).rejects.toBeInstanceOf(RelayerUnderpricedError);
      expect((await relayRow(row.id)).status).toBe('queued');

      await chain.rpc('anvil_setNextBlockBaseFeePerGas', [toBeHex(10n ** 9n)]);
      const again = await t.http.post(`/checkout/${checkout.id}/relay`).send(body);
      expect(again.status).toBe(200);
      expect(again.body.status).toBe('broadcast');
      await mineOne();
    } finally {
      await automine(true);
    }
    await indexUntilStatus(t, seller.org, checkout.id, 'funded');
    expect(await chain.usdcBalance(buyer.address)).toBe(2_500_000n);
    expect((await fundingRelayRows(checkout.id)).map((r) => r.id)).toEqual([relayTxId]);
    // The tender records the mined hash on its next pass.
    const mined = await waitFor(async () => (await relayRow(relayTxId)).mined_tx_hash, { label: 'the mined hash recorded' });
    expect((await chain.provider.getTransactionReceipt(mined))!.status).toBe(1);
  });

  it('a transaction the node dropped is resent from its stored signed bytes (same hash) and mined', async () => {
    const checkout = await createCheckout(t, seller.org, { amount: '2.00' });
    const buyer = await chain.wallet({ usdc: 5n * USDC, eth: false });
    const body = await signedFunding(checkout.id, buyer);
    let txHash: string;
    await automine(false);
    try {
      const relayed = await t.http.post(`/checkout/${checkout.id}/relay`).send(body);
      expect(relayed.body.status).toBe('broadcast');
      txHash = relayed.body.txHash;
      await chain.rpc('anvil_dropTransaction', [txHash]);
      // Dropped, then known again: the tender sent the same bytes.
      await waitFor(async () => (await chain.provider.getTransaction(txHash)) !== null, { label: 'the dropped transaction resent' });
      await mineOne();
    } finally {
      await automine(true);
    }
    expect((await chain.provider.getTransactionReceipt(txHash))!.status).toBe(1);
    const [row] = await fundingRelayRows(checkout.id);
    expect(row.tx_hashes).toEqual([txHash]);
    await indexUntilStatus(t, seller.org, checkout.id, 'funded');
    expect(await chain.usdcBalance(buyer.address)).toBe(3n * USDC);
  });

  it('a dropped transaction whose call would now revert has its nonce filled by a 0-value self-transfer; the later nonce is not stuck', async () => {
    const relayer = t.app.get(RelayerService);
    const payer = await chain.wallet({ usdc: 5n * USDC });
    const payee = Wallet.createRandom().address;
    const auth = await chain.usdc.signTransferAuthorization(payer, { to: payee, value: USDC, validBefore: BigInt((await chain.headTimestamp()) + 3600) });
    const processor = worker.get(RelayerProcessor);
    let a: { relayTxId: string; txHash: string };
    let b: { relayTxId: string; txHash: string };
    await automine(false);
    try {
      a = await relayer.relay({ to: chain.usdc.address, data: chain.usdc.encodeTransferWithAuthorization(auth), purpose: 'test', reference: 'drop-dead-a' });
      b = await relayer.relay({ to: chain.usdc.address, data: USDC_IFACE.encodeFunctionData('approve', [payee, 1n]), purpose: 'test', reference: 'drop-dead-b' });
      expect((await chain.provider.getTransaction(b.txHash))!.nonce).toBe((await chain.provider.getTransaction(a.txHash))!.nonce + 1);
      // Hold the tender while the payload dies: dropped, and its authorization cancelled by the payer.
      await processor.worker.pause();
      await chain.rpc('anvil_dropTransaction', [a.txHash]);
      const cancel = await payer.sendTransaction({ to: chain.usdc.address, data: await chain.usdc.encodeCancelAuthorization(payer, auth.nonce) });
      await mineOne();
      expect((await chain.provider.getTransactionReceipt(cancel.hash))!.status).toBe(1);
      expect(await chain.provider.getTransactionReceipt(b.txHash)).toBeNull(); // stuck behind the gap
      await processor.worker.resume();

      const filled = await waitFor(async () => (await relayRow(a.relayTxId)).filled_by, { label: 'the nonce filled' });
      const fill = await relayRow(filled);
      expect(fill).toMatchObject({ purpose: 'nonce-fill', nonce: (await relayRow(a.relayTxId)).nonce, status: 'broadcast' });
      const fillTx = Transaction.from((await chain.provider.getTransaction(fill.tx_hash!))!);
      expect(fillTx.to).toBe(chain.relayer.address);
      expect(fillTx.value).toBe(0n);
      await mineOne();
    } finally {
      if (processor.worker.isPaused()) await processor.worker.resume();
      await automine(true);
    }
    // The later nonce is not stuck: one of b's hashes is mined (on a slow machine the tender may have
    // replaced b while it waited behind the gap, so its first hash is not the one to look for).
    expect((await relayer.waitMined(b.relayTxId, 60_000))?.status).toBe(1);
    await waitFor(async () => (await relayRow(a.relayTxId)).status === 'failed', { label: 'the dead row failed once its nonce is used' });
    expect((await relayRow(a.relayTxId)).error).toMatch(/used by its fill/);
    await expect(relayer.waitMined(a.relayTxId, 1_000)).rejects.toThrow(/used by its fill/);
    expect(await chain.usdcBalance(payer.address)).toBe(5n * USDC);
    expect(await chain.usdcBalance(payee)).toBe(0n);
  });

  it('a send that finds a gap below it (the node dropped the row holding that nonce) revives that row instead of taking its nonce', async () => {
    const relayer = t.app.get(RelayerService);
    const processor = worker.get(RelayerProcessor);
    const approve = (n: bigint) => USDC_IFACE.encodeFunctionData('approve', [chain.gateway.escrowAddress, n]);
    let a: { relayTxId: string; txHash: string };
    const bId = uuidv7();
    await automine(false);
    try {
      a = await relayer.relay({ to: chain.usdc.address, data: approve(11n), purpose: 'test', reference: 'gap-a' });
      await processor.worker.pause(); // no tender pass: the send itself meets the gap
      await chain.rpc('anvil_dropTransaction', [a.txHash]);
      await t.dataSource.query(`INSERT INTO relayer_transactions (id, address, to_address, data, purpose, status) VALUES ($1, lower($2), $3, $4, 'test', 'queued')`, [
        bId,
        chain.relayer.address,
        chain.usdc.address,
        approve(12n),
      ]);
      const bHash = await worker.get(RelayerSender).send(bId);
      expect(await chain.provider.getTransaction(a.txHash)).not.toBeNull(); // resent, same bytes
      expect((await chain.provider.getTransaction(bHash))!.nonce).toBe((await chain.provider.getTransaction(a.txHash))!.nonce + 1);
      await mineOne();
      expect((await chain.provider.getTransactionReceipt(a.txHash))!.status).toBe(1);
      expect((await chain.provider.getTransactionReceipt(bHash))!.status).toBe(1);
    } finally {
      if (processor.worker.isPaused()) await processor.worker.resume();
      await automine(true);
    }
  });

  it('a relayer below RELAYER_MIN_BALANCE: readiness and the gauge report it, a relay answers 503 unavailable and stores nothing; refilled, it works', async () => {
    const checkout = await createCheckout(t, seller.org, { amount: '1.50' });
    const buyer = await chain.wallet({ usdc: 5n * USDC, eth: false });
    const body = await signedFunding(checkout.id, buyer);
    const before = await chain.provider.getBalance(chain.relayer.address);
    await chain.setEth(chain.relayer.address, parseEther('0.01'));
    try {
      const ready = await t.http.get('/health/ready');
      expectError(ready, 503, 'unavailable');
      expect(JSON.stringify(ready.body)).toContain('RELAYER_MIN_BALANCE');
      const refused = await t.http.post(`/checkout/${checkout.id}/relay`).send(body);
      const details = expectError(refused, 503, 'unavailable');
      expect(details).toMatchObject({ reason: 'relayer_low_balance' });
      expect(refused.headers['retry-after']).toBeDefined();
      expect(await t.dataSource.query(`SELECT * FROM checkout_relays WHERE checkout_session_id = $1`, [checkout.id])).toEqual([]);
      expect(await fundingRelayRows(checkout.id)).toEqual([]);
      expect(await metricsRegistry.getSingleMetricAsString('relayer_balance_low')).toMatch(new RegExp(`relayer_balance_low\\{address="${chain.relayer.address}"\\} 1`));
      // A row queued before the balance fell is not failed at send time: it stays queued, without a nonce.
      const queuedId = uuidv7();
      await t.dataSource.query(`INSERT INTO relayer_transactions (id, address, to_address, data, purpose, status) VALUES ($1, lower($2), $3, $4, 'test', 'queued')`, [
        queuedId,
        chain.relayer.address,
        chain.usdc.address,
        USDC_IFACE.encodeFunctionData('approve', [chain.gateway.escrowAddress, 3n]),
      ]);
      await expect(worker.get(RelayerSender).send(queuedId)).rejects.toBeInstanceOf(RelayerUnfundedError);
      expect(await relayRow(queuedId)).toMatchObject({ status: 'queued', nonce: null, tx_hashes: [] });
    } finally {
      await chain.setEth(chain.relayer.address, before);
    }
    expect((await t.http.get('/health/ready')).status).toBe(200);
    const relayed = await t.http.post(`/checkout/${checkout.id}/relay`).send(body);
    expect(relayed.status).toBe(200);
    expect(relayed.body.status).toBe('broadcast');
    await indexUntilStatus(t, seller.org, checkout.id, 'funded');
    expect(await chain.usdcBalance(buyer.address)).toBe(5n * USDC - 1_500_000n);
    expect(await metricsRegistry.getSingleMetricAsString('relayer_balance_low')).toMatch(new RegExp(`relayer_balance_low\\{address="${chain.relayer.address}"\\} 0`));
  });

  it('x402 while the relayer is low on ETH: 503 unavailable before the reservation, nothing stored or failed; refilled, the same header pays once', async () => {
    // The x402 client takes "now" from Date.now(), the chain from its blocks (other suites move anvil's clock): one clock.
    const skewMs = (await chain.headTimestamp()) * 1000 - Date.now();
    const realNow = Date.now.bind(Date);
    const spy = skewMs > 0 ? jest.spyOn(Date, 'now').mockImplementation(() => realNow() + skewMs) : null;
    try {
      const payee = await createPayee(t, chain);
      const payer = await chain.wallet({ usdc: 5n * USDC, eth: false });
      const url = `/api/v1/x402/challenge?to=${payee.handle}&amount=0.40`;
      const challenge = await t.http.get(url);
      expect(challenge.status).toBe(402);
      const client = new x402Client().register('eip155:31337', new ClientExactEvmScheme(privateKeyToAccount(payer.privateKey as `0x${string}`))).setSpendControls(false);
      const payload = await client.createPaymentPayload(decodePaymentRequiredHeader(challenge.headers['payment-required']));
      const header = Buffer.from(JSON.stringify(payload)).toString('base64');
      const before = await chain.provider.getBalance(chain.relayer.address);
      await chain.setEth(chain.relayer.address, parseEther('0.01'));
      try {
        const refused = await t.http.get(url).set('PAYMENT-SIGNATURE', header);
        expect(expectError(refused, 503, 'unavailable')).toMatchObject({ reason: 'relayer_low_balance' });
        expect(await t.dataSource.query(`SELECT * FROM x402_settlements WHERE payer = lower($1)`, [payer.address])).toEqual([]);
      } finally {
        await chain.setEth(chain.relayer.address, before);
      }
      const paid = await t.http.get(url).set('PAYMENT-SIGNATURE', header);
      expect(paid.status).toBe(200);
      expect(await chain.usdcBalance(payee.address)).toBe(400_000n);
      expect(await chain.usdcBalance(payer.address)).toBe(5n * USDC - 400_000n);
    } finally {
      spy?.mockRestore();
    }
  });
});
