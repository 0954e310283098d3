import { randomUUID } from 'node:crypto';
import { hexlify, randomBytes, Wallet } from 'ethers';
import { createAgent, createPayee, pay, paymentRows, settleUntil } from '../support/agents';
import { createTestApp, TestApp } from '../support/app';
import { cliJson, createCheckout, createParties, fundOnChain, pollToHead, requireBuiltCli, runCli, TestChain, USDC } from '../support/chain';
import { waitFor } from '../support/wait';
import { isolatedWebhookEnv, IsolatedEnv, startTestWorker, TestWorker } from '../support/webhook-env';
import { metricsRegistry } from '../../src/common/metrics';
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

  it('a direct USDC transfer into the escrow contract → escrow_balance, counted, shown in /health/ready, not fixed', async () => {
    const before = await mismatchCount('escrow_balance');
    const stray = await chain.wallet({ usdc: 3n * USDC });
    await chain.usdcTransfer(stray, env.ESCROW_ADDRESS, 3n * USDC);
    // The ledger may trail the head by the indexer's lag, so the chain at the indexer's cursor is accepted
    // too: a mismatch shows once the indexer has read past it (the worker runs both on schedules).
    const atCursor = await svc.run();
    expect(atCursor.clean).toBe(true);
    await pollToHead(t, chain);

    const report = await svc.run();
    expect(report.clean).toBe(false);
    expect(byKind(report, 'escrow_balance')).toEqual([{ kind: 'escrow_balance', ids: [env.ESCROW_ADDRESS], expected: '40.00 held by 1 escrows', actual: '43.00 on chain' }]);
    expect(report.counts).toEqual({ escrow_balance: 1 });
    expect(await mismatchCount('escrow_balance')).toBe(before + 1);

    const ready = await t.http.get('/health/ready');
    expect(ready.status).toBe(200);
    expect(ready.body.details.reconciliation).toEqual({ status: 'up', lastRunAt: report.ranAt, block: report.block, clean: false, mismatches: { escrow_balance: 1 } });
    // Never fixed: the money stays where it is.
    expect(await chain.usdcBalance(env.ESCROW_ADDRESS)).toBe(43n * USDC);
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
    const used = await chain.gateway.signTransferAuthorization(payer, { to: payTo, value: 1n * USDC, validBefore });
    await (await submitter.sendTransaction({ to: chain.gateway.usdcAddress, data: chain.gateway.encodeTransferWithAuthorization(used) })).wait();
    const usedToo = await chain.gateway.signTransferAuthorization(payer, { to: payTo, value: 1n * USDC, validBefore });
    await (await submitter.sendTransaction({ to: chain.gateway.usdcAddress, data: chain.gateway.encodeTransferWithAuthorization(usedToo) })).wait();
    const cancelledNonce = hexlify(randomBytes(32));
    await (await submitter.sendTransaction({ to: chain.gateway.usdcAddress, data: await chain.gateway.encodeCancelAuthorization(payer, cancelledNonce) })).wait();

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
      expect(report.counts).toEqual({ escrow_balance: 1 });
      expect(report.checked.relayers).toBe(1);
      const metrics = await (await fetch(`http://127.0.0.1:${worker.port}/metrics`)).text();
      expect(metrics).toMatch(/reconcile_mismatches_total\{kind="escrow_balance"\} [1-9]/);
    } finally {
      await worker?.close();
    }
  });
});
