import type { INestApplicationContext } from '@nestjs/common';
import { formatAmount, parseAmount } from '@lib/money';
import { createTestApp, TestApp } from '../support/app';
import { createAgent, createPayee, pay, paymentRows, settleUntil, startRelayerWorker, TestAgent } from '../support/agents';
import { PaymentSettlement } from '../../src/modules/payments/payment-settlement.service';
import { TestChain, USDC } from '../support/chain';

/** 200 concurrent payments over four agents against their limits (docs/architecture.md §13 atomicity). */
describe('agent payments under load', () => {
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

  it('200 concurrent payments: no agent exceeds any limit, in the database and on chain', async () => {
    const payee = await createPayee(t, chain);
    const setups: Array<{ policy: Record<string, string>; float: bigint; limits: { perTx?: bigint; daily?: bigint; monthly?: bigint } }> = [
      { policy: { dailyLimit: '100.00' }, float: 500n * USDC, limits: { daily: 100n * USDC } },
      { policy: { dailyLimit: '60.00', monthlyLimit: '45.00' }, float: 500n * USDC, limits: { daily: 60n * USDC, monthly: 45n * USDC } },
      { policy: { perTransactionMax: '5.00', dailyLimit: '150.00' }, float: 500n * USDC, limits: { perTx: 5n * USDC, daily: 150n * USDC } },
      { policy: { dailyLimit: '1000.00' }, float: 70n * USDC, limits: {} },
    ];
    const agents: TestAgent[] = [];
    for (const s of setups) agents.push(await createAgent(t, chain, { policy: s.policy, float: s.float }));
    const before = await Promise.all(agents.map((a) => chain.usdcBalance(a.signerAddress)));
    // The authorization indexer at head, then idle during the burst: the balance check must count
    // transfers mined but not yet indexed exactly once (readSignerBalance).
    const settlement = t.app.get(PaymentSettlement);
    for (let r = await settlement.pollOnce(); r.fromBlock <= r.toBlock; r = await settlement.pollOnce());

    let seed = 7;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
    const requests = Array.from({ length: 200 }, (_, i) => ({ agent: agents[i % 4], amount: `${1 + (next() % 9)}.${String(next() % 100).padStart(2, '0')}` }));
    const started = Date.now();
    const results = await Promise.all(requests.map((r) => pay(t, r.agent, { to: payee.handle, amount: r.amount })));
    const elapsed = Date.now() - started;
    const accepted = results.filter((r) => r.status === 200).length;
    const refused = results.filter((r) => r.status === 403);
    expect(accepted + refused.length).toBe(200);
    for (const r of refused) expect(r.body.code).toBe('policy_denied');

    await settleUntil(t, async () => {
      for (const a of agents) if ((await paymentRows(t, a.agentId)).some((p) => p.status !== 'succeeded')) return false;
      return true;
    }, 'all accepted payments succeeded', 200);

    const figures: string[] = [];
    for (const [i, a] of agents.entries()) {
      const rows = await paymentRows(t, a.agentId);
      const sum = rows.reduce((s, p) => s + BigInt(p.amount), 0n);
      const { perTx, daily, monthly } = setups[i].limits;
      if (perTx !== undefined) for (const p of rows) expect(BigInt(p.amount)).toBeLessThanOrEqual(perTx);
      if (daily !== undefined) expect(sum).toBeLessThanOrEqual(daily);
      if (monthly !== undefined) expect(sum).toBeLessThanOrEqual(monthly);
      const spentOnChain = before[i] - (await chain.usdcBalance(a.signerAddress));
      expect(spentOnChain).toBe(sum);
      expect(spentOnChain).toBeLessThanOrEqual(setups[i].float);
      // The refusals were real: the smallest amount refused by a window limit would have crossed
      // it, and the smallest refused for the balance would have spent more than the float (the
      // balance check is exact: readSignerBalance).
      const refusedFor = (balance: boolean) =>
        results
          .filter((r, j) => requests[j].agent === a && r.status === 403 && (r.body.details.rule === 'insufficient_balance') === balance)
          .map((r) => parseAmount(r.body.details.requested as string));
      const smallestOf = (xs: bigint[]) => xs.reduce((m, x) => (x < m ? x : m));
      const refusedAmounts = refusedFor(false);
      if (refusedAmounts.length > 0 && (daily !== undefined || monthly !== undefined)) {
        const smallest = smallestOf(refusedAmounts);
        const cap = [daily, monthly].filter((x): x is bigint => x !== undefined).reduce((m, x) => (x < m ? x : m));
        if (perTx === undefined || smallest <= perTx) expect(sum + smallest).toBeGreaterThan(cap);
      }
      const refusedForBalance = refusedFor(true);
      if (refusedForBalance.length > 0) expect(sum + smallestOf(refusedForBalance)).toBeGreaterThan(setups[i].float);
      figures.push(`agent ${i}: ${rows.length} paid, ${refusedAmounts.length + refusedForBalance.length} refused (${refusedForBalance.length} for the balance), ${formatAmount(sum)} USDC`);
    }
    console.log(`200 concurrent payments over 4 agents in ${elapsed} ms: ${accepted} accepted, ${refused.length} refused; ${figures.join('; ')}`);
  });
});
