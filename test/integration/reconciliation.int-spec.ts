import { randomUUID } from 'node:crypto';
import { hexlify, randomBytes, Wallet } from 'ethers';
import { createAgent, createPayee, pay, paymentRows, settleUntil } from '../support/agents';
import { createTestApp, TestApp } from '../support/app';
import { cliJson, createCheckout, createParties, fundOnChain, pollToHead, requireBuiltCli, runCli, TestChain, USDC } from '../support/chain';
import { waitFor } from '../support/wait';
import { RpcGate } from '../support/rpc-gate';
import { isolatedWebhookEnv, IsolatedEnv, startTestWorker, TestWorker } from '../support/webhook-env';
import { metricsRegistry } from '../../src/common/metrics';
import { HELD } from '../../src/chain/reconciliation/reconciliation.repository';
import { ReconcileReport, ReconciliationService } from '../../src/chain/reconciliation/reconciliation.service';

// CLI runs boot a Nest application context each.
jest.setTimeout(180_000);

/**
 * Reconciliation (DESIGN §18) against real Postgres, Redis and anvil. The file has its own database and
 * Redis prefix, and its own CheckoutEscrow deployed by `cli chain:deploy` on the run's anvil, so the ledger
 * and the contract hold exactly this file's escrows. Mismatches are injected for real (a direct USDC
 * transfer into the contract, rows edited to disagree with the chain) and must be reported, counted and
 * left as they are.
 */
describe('reconciliation: the ledger proves itself against the chain', () => {
  let iso: IsolatedEnv;
  let env: Record<string, string>;
  let chain: TestChain;
  let t: TestApp;
  let svc: ReconciliationService;

  const mismatchCount = async (kind: string): Promise<number> => {
    const metric = await metricsRegistry.getSingleMetric('reconcile_mismatches_total')!.get();
    return metric.values.find((v) => v.labels.kind === kind)?.value ?? 0;
  };
  const byKind = (r: ReconcileReport, kind: string) => r.mismatches.filter((m) => m.kind === kind);

  beforeAll(async () => {
    requireBuiltCli();
    iso = await isolatedWebhookEnv('reconcile');
    const deployer = Wallet.createRandom();
    const shared = new TestChain();
    await shared.setEth(deployer.address);
    shared.close();

    const run = await runCli(['chain:deploy', '--json'], { ...iso.env, DEPLOYER_PRIVATE_KEY: deployer.privateKey });
    expect(run.code).toBe(0);
    const deployed = cliJson(run);
    expect(deployed).toMatchObject({
      ESCROW_ADDRESS: expect.stringMatching(/^0x[0-9a-fA-F]{40}$/),
      ESCROW_DEPLOY_BLOCK: expect.any(Number),
      admin: deployer.address,
      usdcAddress: process.env.USDC_ADDRESS,
      termsSigner: new Wallet(process.env.TERMS_SIGNER_PRIVATE_KEY!).address,
      arbiter: new Wallet(process.env.ARBITER_PRIVATE_KEY!).address,
    });
    env = { ...iso.env, ESCROW_ADDRESS: deployed.ESCROW_ADDRESS as string, ESCROW_DEPLOY_BLOCK: String(deployed.ESCROW_DEPLOY_BLOCK) };
    chain = new TestChain({ ...process.env, ...env });
    t = await createTestApp(env);
    svc = t.app.get(ReconciliationService);
  });
  afterAll(async () => {
    await t?.close();
    chain?.close();
    await iso?.drop();
  });

  it('chain:deploy deployed a working escrow (code at the address, the configured roles) and prints the env lines without --json', async () => {
    expect(await chain.provider.getCode(env.ESCROW_ADDRESS)).not.toBe('0x');
    const deployer = Wallet.createRandom();
    await chain.setEth(deployer.address);
    const run = await runCli(['chain:deploy', '--arbiter', '0x000000000000000000000000000000000000dEaD'], { ...iso.env, DEPLOYER_PRIVATE_KEY: deployer.privateKey });
    expect(run.code).toBe(0);
    const lines = run.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^# CheckoutEscrow on chain 31337 .*arbiter 0x000000000000000000000000000000000000dEaD/);
    expect(lines.slice(1)).toEqual([expect.stringMatching(/^ESCROW_ADDRESS=0x[0-9a-fA-F]{40}$/), expect.stringMatching(/^ESCROW_DEPLOY_BLOCK=\d+$/)]);
  });

  it('chain:deploy refuses an RPC whose chain is not CHAIN_ID, deploying nothing', async () => {
    const deployer = Wallet.createRandom();
    const run = await runCli(['chain:deploy', '--json'], { ...iso.env, CHAIN: 'base-sepolia', CHAIN_ID: '84532', DEPLOYER_PRIVATE_KEY: deployer.privateKey, TERMS_SIGNER_PRIVATE_KEY: Wallet.createRandom().privateKey, ARBITER_PRIVATE_KEY: Wallet.createRandom().privateKey });
    expect(run.code).toBe(2);
    expect(cliJson(run).error).toMatch(/is chain 31337, not CHAIN_ID 84532/);
    expect(await chain.provider.getTransactionCount(deployer.address)).toBe(0);
  });

  it('clean ledger → no mismatch; the CLI prints the same report as JSON', async () => {
    const { seller, buyer } = await createParties(t, chain);
    const checkout = await createCheckout(t, seller.org, { amount: '40.00' });
    await fundOnChain(t, chain, checkout.id, buyer.wallet);
    await pollToHead(t, chain);

    const report = await svc.run();
    expect(report).toMatchObject({ clean: true, mismatches: [], escrowBalance: { ledger: '40.00', chain: '40.00' } });
    expect(report.checked.escrows).toBe(1);

    const run = await runCli(['reconcile', '--json'], env);
    expect(run.code).toBe(0);
    expect(cliJson(run)).toMatchObject({ clean: true, mismatches: [], checked: { escrows: 1 } });

    const ready = await t.http.get('/health/ready');
    expect(ready.status).toBe(200);
    expect(ready.body.details.reconciliation).toMatchObject({ status: 'up', clean: true, mismatches: {} });
  });

  it('a configured USDC domain that is not the token’s (a wrong CHAIN profile) → usdc_domain', async () => {
    const run = await runCli(['reconcile', '--json'], { ...env, USDC_EIP712_NAME: 'USDC', USDC_EIP712_VERSION: '2' });
    expect(run.code).toBe(0);
    const report = cliJson(run) as unknown as ReconcileReport;
    expect(report.counts).toEqual({ usdc_domain: 1 });
    expect(byKind(report, 'usdc_domain')).toEqual([
      { kind: 'usdc_domain', ids: [process.env.USDC_ADDRESS], expected: expect.stringMatching(/^DOMAIN_SEPARATOR 0x[0-9a-f]{64}$/), actual: expect.stringMatching(/\(USDC, 2\)$/) },
    ]);
  });

  it('two passes at once: one runs, the other is skipped (cluster-wide lock)', async () => {
    const results = await Promise.all([svc.runExclusive(), svc.runExclusive()]);
    expect(results.filter((r) => r === null)).toHaveLength(1);
    expect(results.find((r) => r !== null)).toMatchObject({ clean: true });
  });

  it('a direct USDC transfer into the escrow contract → the notice escrow_surplus: logged, shown in /health/ready, not a mismatch, not counted, not fixed; a deficit is escrow_balance', async () => {
    const before = await mismatchCount('escrow_balance');
    const stray = await chain.wallet({ usdc: 3n * USDC });
    await chain.usdcTransfer(stray, env.ESCROW_ADDRESS, 3n * USDC);
    await pollToHead(t, chain);

    const report = await svc.run();
    expect(report.clean).toBe(true);
    expect(report.counts).toEqual({});
    expect(report.notices).toEqual([{ kind: 'escrow_surplus', ids: [env.ESCROW_ADDRESS], expected: '40.00 held by 1 escrows', actual: '43.00 on chain' }]);
    expect(await mismatchCount('escrow_balance')).toBe(before);

    const ready = await t.http.get('/health/ready');
    expect(ready.status).toBe(200);
    expect(ready.body.details.reconciliation).toEqual({
      status: 'up',
      lastRunAt: report.ranAt,
      block: report.block,
      clean: true,
      mismatches: {},
      notices: { escrow_surplus: '43.00 on chain' },
    });
    // Never fixed: the money stays where it is.
    expect(await chain.usdcBalance(env.ESCROW_ADDRESS)).toBe(43n * USDC);

    // The ledger holding more than the contract is a deficit: still a mismatch, counted.
    const [row] = await t.dataSource.query<Array<{ id: string }>>(`SELECT id FROM escrows`);
    await t.dataSource.query(`UPDATE escrows SET amount_units = 50000000 WHERE id = $1`, [row.id]);
    try {
      const deficit = await svc.run();
      expect(deficit.notices).toEqual([]);
      expect(byKind(deficit, 'escrow_balance')).toEqual([{ kind: 'escrow_balance', ids: [env.ESCROW_ADDRESS], expected: '50.00 held by 1 escrows', actual: '43.00 on chain' }]);
      expect(await mismatchCount('escrow_balance')).toBe(before + 1);
    } finally {
      await t.dataSource.query(`UPDATE escrows SET amount_units = 40000000 WHERE id = $1`, [row.id]);
    }
  });

  it('an escrow row edited to disagree with the chain → escrow_state with its id; the row keeps its (wrong) status', async () => {
    const [row] = await t.dataSource.query<Array<{ id: string }>>(`SELECT id FROM escrows`);
    await t.dataSource.query(`UPDATE escrows SET status = 'disputed' WHERE id = $1`, [row.id]);
    const before = await mismatchCount('escrow_state');

    const report = await svc.run();
    expect(byKind(report, 'escrow_state')).toEqual([{ kind: 'escrow_state', ids: [row.id], expected: 'disputed', actual: 'funded' }]);
    expect(await mismatchCount('escrow_state')).toBe(before + 1);
    const [after] = await t.dataSource.query<Array<{ status: string }>>(`SELECT status FROM escrows WHERE id = $1`, [row.id]);
    expect(after.status).toBe('disputed');
    await t.dataSource.query(`UPDATE escrows SET status = 'funded' WHERE id = $1`, [row.id]);
  });

  it('x402 settlements: settled but unused, failed but used → x402_authorization; failed and cancelled, settled and used → fine', async () => {
    const payer = await chain.wallet({ usdc: 10n * USDC });
    const payTo = (await chain.wallet()).address;
    const submitter = await chain.wallet(); // not the relayer: its nonces are the relayer queue's
    const validBefore = BigInt(await chain.headTimestamp()) + 3600n;
    const used = await chain.usdc.signTransferAuthorization(payer, { to: payTo, value: 1n * USDC, validBefore });
    await chain.mined(submitter.sendTransaction({ to: chain.usdc.address, data: chain.usdc.encodeTransferWithAuthorization(used) }), 'transferWithAuthorization');
    const usedToo = await chain.usdc.signTransferAuthorization(payer, { to: payTo, value: 1n * USDC, validBefore });
    await chain.mined(submitter.sendTransaction({ to: chain.usdc.address, data: chain.usdc.encodeTransferWithAuthorization(usedToo) }), 'transferWithAuthorization');
    const cancelledNonce = hexlify(randomBytes(32));
    await chain.mined(submitter.sendTransaction({ to: chain.usdc.address, data: await chain.usdc.encodeCancelAuthorization(payer, cancelledNonce) }), 'cancelAuthorization');

    const insert = (status: string, nonce: string) =>
      t.dataSource
        .query<Array<{ id: string }>>(
          `INSERT INTO x402_settlements (id, payer, nonce, pay_to, payee_handle, amount, resource, status)
           VALUES ($1, $2, $3, $4, 'shop', 1000000, 'https://example.test/r', $5) RETURNING id`,
          [randomUUID(), payer.address, nonce, payTo, status],
        )
        .then((r) => r[0].id);
    const settledUnused = await insert('settled', hexlify(randomBytes(32)));
    const failedUsed = await insert('failed', used.nonce);
    await insert('failed', cancelledNonce);
    await insert('settled', usedToo.nonce);

    const report = await svc.run();
    expect(byKind(report, 'x402_authorization').map((m) => [m.ids[0], m.actual]).sort()).toEqual(
      [
        [settledUnused, 'unused'],
        [failedUsed, 'used on chain'],
      ].sort(),
    );
    expect(report.checked.x402Settlements).toBe(4);
    const rows = await t.dataSource.query<Array<{ status: string }>>(`SELECT status FROM x402_settlements WHERE id = ANY($1) ORDER BY status`, [[settledUnused, failedUsed]]);
    expect(rows.map((r) => r.status)).toEqual(['failed', 'settled']);
    await t.dataSource.query(`DELETE FROM x402_settlements`);
  });

  it('relayer nonces: a gap older than the bump time → relayer_nonce; a young gap and an exact count are fine', async () => {
    const gapped = Wallet.createRandom().address;
    const young = Wallet.createRandom().address;
    const exact = Wallet.createRandom().address;
    await t.dataSource.query(`INSERT INTO relayer_nonces (address, next_nonce) VALUES ($1, 2), ($2, 1), ($3, 0)`, [gapped, young, exact]);
    const tx = (address: string, age: string) =>
      t.dataSource
        .query<Array<{ id: string }>>(
          `INSERT INTO relayer_transactions (id, address, nonce, to_address, data, purpose, status, created_at, updated_at)
           VALUES ($1, $2, 0, $2, '0x', 'test', 'broadcast', now() - $3::interval, now() - $3::interval) RETURNING id`,
          [randomUUID(), address, age],
        )
        .then((r) => r[0].id);
    const oldRow = await tx(gapped, '1 hour');
    await tx(young, '0 seconds');

    const report = await svc.run();
    expect(byKind(report, 'relayer_nonce')).toEqual([
      { kind: 'relayer_nonce', ids: [gapped, oldRow], expected: 'next nonce 2', actual: 'node pending count 0' },
    ]);
    await t.dataSource.query(`DELETE FROM relayer_transactions WHERE address = ANY($1)`, [[gapped, young]]);
    await t.dataSource.query(`DELETE FROM relayer_nonces WHERE address = ANY($1)`, [[gapped, young, exact]]);
  });

  /** A payment row as the ledger would hold it (the agent is only its owner here; `from` signed the authorization). */
  async function insertPayment(agent: { agentId: string; organizationId: string }, p: { status: string; from: string; to: string; amount: bigint; nonce: string; validBefore: number; txHash?: string | null }): Promise<string> {
    const id = randomUUID();
    await t.dataSource.query(
      `INSERT INTO payments (id, agent_id, organization_id, idempotency_key, fingerprint, status, mode, to_handle, to_address, from_address, amount, fee,
                             auth_nonce, auth_valid_before, auth_signature, relay_tx_hashes, tx_hash, created_at, updated_at)
       VALUES ($1, $2, $3, $11, 'f', $4, 'instant', 'shop', $5, $6, $7, 0, lower($8), $9, '0x', '{}', $10, now(), now())`,
      [id, agent.agentId, agent.organizationId, p.status, p.to, p.from, p.amount.toString(), p.nonce, p.validBefore, p.txHash ?? null, `key-${id}`],
    );
    return id;
  }

  it('each succeeded payment against its Transfer log: another amount → payment_amount, another payee → payment_recipient; the right one is fine', async () => {
    const agent = await createAgent(t, chain, { policy: null, enable: false });
    const payer = await chain.wallet({ usdc: 10n * USDC });
    const payee = (await chain.wallet({ eth: false })).address;
    const other = (await chain.wallet({ eth: false })).address;
    const submitter = await chain.wallet();
    const validBefore = (await chain.headTimestamp()) + 3600;
    const transfer = async () => {
      const auth = await chain.usdc.signTransferAuthorization(payer, { to: payee, value: 2n * USDC, validBefore: BigInt(validBefore) });
      const receipt = await chain.mined(submitter.sendTransaction({ to: chain.usdc.address, data: chain.usdc.encodeTransferWithAuthorization(auth) }), 'transferWithAuthorization');
      return { nonce: auth.nonce, txHash: receipt.hash };
    };
    const [a, b, c] = [await transfer(), await transfer(), await transfer()];
    const right = await insertPayment(agent, { status: 'succeeded', from: payer.address, to: payee, amount: 2n * USDC, validBefore, ...a });
    const wrongAmount = await insertPayment(agent, { status: 'succeeded', from: payer.address, to: payee, amount: 3n * USDC, validBefore, ...b });
    const wrongRecipient = await insertPayment(agent, { status: 'succeeded', from: payer.address, to: other, amount: 2n * USDC, validBefore, ...c });
    try {
      const report = await svc.run();
      expect(report.mismatches.filter((m) => [right, wrongAmount, wrongRecipient].includes(m.ids[0])).sort((x, y) => x.kind.localeCompare(y.kind))).toEqual([
        { kind: 'payment_amount', ids: [wrongAmount], expected: `3.00 to ${payee.toLowerCase()}`, actual: `2.00 in ${b.txHash}` },
        { kind: 'payment_recipient', ids: [wrongRecipient], expected: `2.00 to ${other.toLowerCase()}`, actual: `2.00 to ${payee.toLowerCase()} in ${c.txHash}` },
      ]);
      expect(report.counts).toMatchObject({ payment_amount: 1, payment_recipient: 1 });
    } finally {
      await t.dataSource.query(`DELETE FROM payments WHERE id = ANY($1)`, [[right, wrongAmount, wrongRecipient]]);
    }
  });

  it('pending or submitted past validBefore (and the sweep’s idle time) → stale_pending, payments and x402 settlements; one still valid is fine', async () => {
    const agent = await createAgent(t, chain, { policy: null, enable: false });
    const now = await chain.headTimestamp();
    const from = Wallet.createRandom().address;
    const stale = await insertPayment(agent, { status: 'submitted', from, to: from, amount: USDC, nonce: hexlify(randomBytes(32)), validBefore: now - 100_000 });
    const fresh = await insertPayment(agent, { status: 'submitted', from, to: from, amount: USDC, nonce: hexlify(randomBytes(32)), validBefore: now + 3600 });
    const x402 = randomUUID();
    await t.dataSource.query(
      `INSERT INTO x402_settlements (id, payer, nonce, pay_to, payee_handle, amount, resource, status, valid_after, valid_before)
       VALUES ($1, lower($2), $3, $2, 'shop', 1000000, 'https://example.test/r', 'pending', 0, $4)`,
      [x402, from, hexlify(randomBytes(32)), now - 100_000],
    );
    try {
      const report = await svc.run();
      expect(byKind(report, 'stale_pending').map((m) => [m.ids[0], m.actual.split(' at ')[0]]).sort()).toEqual([[stale, 'submitted'], [x402, 'pending']].sort());
      expect(report.mismatches.some((m) => m.ids.includes(fresh))).toBe(false);
    } finally {
      await t.dataSource.query(`DELETE FROM payments WHERE id = ANY($1)`, [[stale, fresh]]);
      await t.dataSource.query(`DELETE FROM x402_settlements WHERE id = $1`, [x402]);
    }
  });

  it('a pass over a range a node refuses in one eth_getLogs: cancellations are read in windows from a cursor; failed-and-cancelled is fine, failed-but-used is reported', async () => {
    const WINDOW = 50;
    const gate = await RpcGate.start(process.env.RPC_URL!);
    gate.refuse((method, params) => {
      if (method !== 'eth_getLogs') return null;
      const f = params[0] as { fromBlock?: string; toBlock?: string };
      const span = Number(f.toBlock ?? 0) - Number(f.fromBlock ?? 0) + 1;
      return span > WINDOW ? { code: -32005, message: `query exceeds max block range ${WINDOW}` } : null;
    });
    const narrow = await createTestApp({ ...env, RPC_URL: gate.url, RECONCILE_LOG_WINDOW: String(WINDOW) });
    const agent = await createAgent(t, chain, { policy: null, enable: false });
    const payer = await chain.wallet({ usdc: 5n * USDC });
    const submitter = await chain.wallet();
    const validBefore = (await chain.headTimestamp()) + 3600;
    const cancelledNonce = hexlify(randomBytes(32));
    await chain.mined(submitter.sendTransaction({ to: chain.usdc.address, data: await chain.usdc.encodeCancelAuthorization(payer, cancelledNonce) }), 'cancelAuthorization');
    const used = await chain.usdc.signTransferAuthorization(payer, { to: submitter.address, value: USDC, validBefore: BigInt(validBefore) });
    await chain.mined(submitter.sendTransaction({ to: chain.usdc.address, data: chain.usdc.encodeTransferWithAuthorization(used) }), 'transferWithAuthorization');
    await chain.mine(4 * WINDOW);
    const cancelledRow = await insertPayment(agent, { status: 'failed', from: payer.address, to: submitter.address, amount: USDC, nonce: cancelledNonce, validBefore });
    const usedRow = await insertPayment(agent, { status: 'failed', from: payer.address, to: submitter.address, amount: USDC, nonce: used.nonce, validBefore });
    // Read again from the deploy block: the whole chain of this run, far wider than one window.
    await t.dataSource.query(`DELETE FROM chain_cursors WHERE name = 'reconcile-cancels'`);
    await t.dataSource.query(`DELETE FROM reconcile_cancellations`);
    try {
      const head = await chain.headBlock();
      expect(head - Number(env.ESCROW_DEPLOY_BLOCK)).toBeGreaterThan(4 * WINDOW);
      // The fault is live: the node behind the gate refuses the range in one call.
      const refused = await fetch(gate.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_getLogs', params: [{ fromBlock: `0x${Number(env.ESCROW_DEPLOY_BLOCK).toString(16)}`, toBlock: `0x${head.toString(16)}` }] }) });
      expect((await refused.json()).error).toMatchObject({ code: -32005 });
      const before = gate.refused.eth_getLogs ?? 0;

      const report = await narrow.app.get(ReconciliationService).run();
      expect(gate.refused.eth_getLogs ?? 0).toBe(before);
      expect(report.cancelScan).toEqual({ cursor: report.block, block: report.block });
      expect(report.mismatches.filter((m) => [cancelledRow, usedRow].includes(m.ids[0]))).toEqual([
        { kind: 'payment_authorization', ids: [usedRow], expected: 'authorization unused or cancelled', actual: 'used on chain' },
      ]);
    } finally {
      await t.dataSource.query(`DELETE FROM payments WHERE id = ANY($1)`, [[cancelledRow, usedRow]]);
      await narrow.close();
      await gate.stop();
    }
  });

  it('a pass reads held escrows, and escrows changed in the last 7 days, in batches of RECONCILE_BATCH from two cursors, and starts each over after its last', async () => {
    const small = await createTestApp({ ...env, RECONCILE_BATCH: '1' });
    const { seller, buyer } = await createParties(t, chain);
    const checkout = await createCheckout(t, seller.org, { amount: '2.00' });
    await fundOnChain(t, chain, checkout.id, buyer.wallet);
    await pollToHead(t, chain);
    try {
      const svc1 = small.app.get(ReconciliationService);
      const held = (await t.dataSource.query<Array<{ id: string }>>(`SELECT id FROM escrows WHERE status = ANY($1) ORDER BY id`, [[...HELD]])).map((r) => r.id);
      const recent = (await t.dataSource.query<Array<{ id: string }>>(`SELECT id FROM escrows WHERE updated_at > now() - interval '7 days' ORDER BY updated_at, id`)).map((r) => r.id);
      expect(held.length).toBeGreaterThanOrEqual(1);
      expect(recent.length).toBeGreaterThanOrEqual(held.length);
      const passes: Array<{ held: { after: string; wrapped: boolean }; recentAfterId: string; recentWrapped: boolean; checked: number }> = [];
      for (let i = 0; i <= recent.length; i++) {
        const r = await svc1.run();
        passes.push({ held: r.escrowBatch, recentAfterId: r.recentEscrowBatch.after.split('|').at(-1)!, recentWrapped: r.recentEscrowBatch.wrapped, checked: r.checked.escrows });
      }
      // Earlier passes (batches of 500) ended by starting over; now one escrow of each kind per pass, in its order, then over again.
      const heldPasses = passes.slice(0, held.length + 1).map((p) => p.held);
      expect(heldPasses).toEqual([...['', ...held.slice(0, -1)].map((after) => ({ after, wrapped: false })), { after: held[held.length - 1], wrapped: true }]);
      expect(passes.map((p) => p.recentAfterId)).toEqual(['', ...recent]);
      expect(passes.map((p) => p.recentWrapped)).toEqual([...recent.map(() => false), true]);
      // A held escrow in both batches of a pass is checked once.
      for (const [i, p] of passes.slice(0, Math.min(held.length, recent.length)).entries()) expect(p.checked).toBe(held[i] === recent[i] ? 1 : 2);
      const again = await svc1.run();
      expect(again.recentEscrowBatch).toEqual({ after: '', wrapped: false });
    } finally {
      await small.close();
    }
  });

  it('ended payments are read in batches of RECONCILE_BATCH from a cursor: no pass reads more than one batch, and a wrong amount beyond the first batch is reported once the cursor reaches it', async () => {
    const BATCH = 2;
    const small = await createTestApp({ ...env, RECONCILE_BATCH: String(BATCH) });
    const agent = await createAgent(t, chain, { policy: null, enable: false });
    const payer = await chain.wallet({ usdc: 10n * USDC });
    const payee = (await chain.wallet({ eth: false })).address;
    const submitter = await chain.wallet();
    const validBefore = (await chain.headTimestamp()) + 3600;
    const auth = await chain.usdc.signTransferAuthorization(payer, { to: payee, value: 2n * USDC, validBefore: BigInt(validBefore) });
    const receipt = await chain.mined(submitter.sendTransaction({ to: chain.usdc.address, data: chain.usdc.encodeTransferWithAuthorization(auth) }), 'transferWithAuthorization');
    // Five failed payments whose authorizations were never used (fine) ended before the wrong one: the
    // first batches are theirs (and any ended earlier by other tests of this file).
    const fillers: string[] = [];
    for (let i = 0; i < 5; i++) fillers.push(await insertPayment(agent, { status: 'failed', from: payer.address, to: payee, amount: USDC, validBefore, nonce: hexlify(randomBytes(32)) }));
    await t.dataSource.query(`UPDATE payments SET updated_at = now() - interval '1 hour' WHERE id = ANY($1)`, [fillers]);
    const wrongAmount = await insertPayment(agent, { status: 'succeeded', from: payer.address, to: payee, amount: 3n * USDC, validBefore, nonce: auth.nonce, txHash: receipt.hash });
    const ours = [...fillers, wrongAmount];
    try {
      const svc1 = small.app.get(ReconciliationService);
      // Finish the cycle the earlier passes (batches of 500) left, so this one starts from the window's start.
      for (let i = 0; i < 100 && !(await svc1.run()).paymentBatch.wrapped; i++);
      const passes: ReconcileReport[] = [];
      do passes.push(await svc1.run());
      while (!passes[passes.length - 1].paymentBatch.wrapped && passes.length < 100);
      expect(passes[0].paymentBatch.after).toBe('');
      for (const r of passes) expect(r.checked.payments).toBeLessThanOrEqual(BATCH);
      const total = (await t.dataSource.query<Array<{ n: number }>>(
        `SELECT count(*)::int AS n FROM payments WHERE status IN ('succeeded', 'failed') AND auth_nonce IS NOT NULL AND updated_at > now() - interval '7 days'`,
      ))[0].n;
      expect(total).toBeGreaterThanOrEqual(ours.length);
      // Every ended payment is read once across the cycle: ceil(total / BATCH) full-or-partial batches (one more, empty, when BATCH divides it).
      expect(passes.reduce((n, r) => n + r.checked.payments, 0)).toBe(total);
      expect(passes.length).toBe(Math.floor(total / BATCH) + 1);
      const reported = passes.map((r, i) => [i, byKind(r, 'payment_amount').filter((m) => m.ids[0] === wrongAmount).length] as const).filter(([, n]) => n > 0);
      // The wrong row ended last: not in the first batch, reported by exactly one later pass.
      expect(reported).toEqual([[expect.any(Number), 1]]);
      expect(reported[0][0]).toBeGreaterThan(0);
      expect(passes.flatMap((r) => r.mismatches).filter((m) => fillers.includes(m.ids[0]))).toEqual([]);
    } finally {
      await t.dataSource.query(`DELETE FROM payments WHERE id = ANY($1)`, [ours]);
      await small.close();
    }
  });

  it('the worker runs the pass on its schedule (RECONCILE_INTERVAL_S); a relayed agent payment reconciles; a payment row edited to failed → payment_authorization', async () => {
    let worker: TestWorker | undefined;
    try {
      worker = await startTestWorker({ ...env, RECONCILE_INTERVAL_S: '5' });
      // An agent payment relayed through the worker's relayer queue, settled from its AuthorizationUsed log.
      const agent = await createAgent(t, chain, { float: 20n * USDC, policy: { dailyLimit: '100.00' } });
      const payee = await createPayee(t, chain);
      const paid = await pay(t, agent, { to: payee.handle, amount: '5.00' });
      expect(paid.status).toBe(200);
      await settleUntil(t, async () => (await paymentRows(t, agent.agentId))[0]?.status === 'succeeded');
      const settled = await svc.run();
      expect(settled.checked.payments).toBe(1);
      expect(byKind(settled, 'payment_authorization')).toEqual([]);
      expect(byKind(settled, 'relayer_nonce')).toEqual([]);

      await t.dataSource.query(`UPDATE payments SET status = 'failed' WHERE id = $1`, [paid.body.id]);
      const edited = await svc.run();
      expect(byKind(edited, 'payment_authorization')).toEqual([
        { kind: 'payment_authorization', ids: [paid.body.id], expected: 'authorization unused or cancelled', actual: 'used on chain' },
      ]);
      expect((await paymentRows(t, agent.agentId))[0].status).toBe('failed');
      await t.dataSource.query(`UPDATE payments SET status = 'succeeded' WHERE id = $1`, [paid.body.id]);

      const since = new Date().toISOString();
      const report = await waitFor(
        async () => {
          const r = await svc.lastReport();
          return r && r.ranAt > since ? r : null;
        },
        { timeoutMs: 30_000, label: 'a scheduled reconciliation pass' },
      );
      expect(report.counts).toEqual({});
      expect(report.notices.map((n) => n.kind)).toEqual(['escrow_surplus']);
      expect(report.checked.relayers).toBe(1);
      const metrics = await (await fetch(`http://127.0.0.1:${worker.port}/metrics`)).text();
      expect(metrics).toMatch(/reconcile_runs_total\{outcome="clean"\} [1-9]/);
    } finally {
      await worker?.close();
    }
  });
});
