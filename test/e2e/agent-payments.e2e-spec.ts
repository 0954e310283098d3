import type { INestApplicationContext } from '@nestjs/common';
import { createTestApp, TestApp } from '../support/app';
import { createAgent, createPayee, pay, paymentRows, settleUntil, startRelayerWorker } from '../support/agents';
import { PaymentSettlement } from '../../src/modules/payments/payment-settlement.service';
import { TestChain, USDC } from '../support/chain';
import { waitFor } from '../support/wait';

describe('agent payments (POST /payments, docs/architecture.md §13)', () => {
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

  it('pays a merchant handle: submitted at once, succeeded from AuthorizationUsed; the payee balance rises and the signer pays no gas', async () => {
    const payee = await createPayee(t, chain);
    const agent = await createAgent(t, chain, { float: 100n * USDC, policy: { dailyLimit: '100.00' } });
    const eth0 = await chain.provider.getBalance(agent.signerAddress);
    const started = Date.now();
    const res = await pay(t, agent, { to: payee.handle.toUpperCase(), amount: '12.5' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'submitted', to: payee.handle, toAddress: payee.address, amount: '12.50', fee: '0.00', mode: 'instant', txHash: null });
    await settleUntil(t, async () => (await t.http.get(`/api/v1/payments/${res.body.id}`).set('X-Api-Key', agent.key)).body.status === 'succeeded');
    const latencyMs = Date.now() - started;
    const after = await t.http.get(`/api/v1/payments/${res.body.id}`).set('X-Api-Key', agent.key);
    expect(after.body).toMatchObject({ status: 'succeeded', txHash: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
    expect(await chain.usdcBalance(payee.address)).toBe(12_500_000n);
    expect(await chain.usdcBalance(agent.signerAddress)).toBe(87_500_000n);
    expect(await chain.provider.getBalance(agent.signerAddress)).toBe(eth0);
    const me = await t.http.get('/api/v1/agent').set('X-Api-Key', agent.key);
    expect(me.body.usage).toEqual({ usedToday: '12.50', usedThisMonth: '12.50' });
    console.log(`payment latency request → succeeded on anvil: ${latencyMs} ms`);
  });

  it('overspend proof: daily limit 100.00, ten concurrent 20.00 payments with distinct keys → exactly five succeed, five policy_denied daily_limit; exactly 100.00 leaves the signer', async () => {
    const payee = await createPayee(t, chain);
    const agent = await createAgent(t, chain, { float: 500n * USDC, policy: { dailyLimit: '100.00' } });
    const before = await chain.usdcBalance(agent.signerAddress);
    const results = await Promise.all(Array.from({ length: 10 }, () => pay(t, agent, { to: payee.handle, amount: '20.00' })));
    const ok = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status === 403);
    expect(ok).toHaveLength(5);
    expect(refused).toHaveLength(5);
    for (const r of refused) expect(r.body).toMatchObject({ code: 'policy_denied', details: { rule: 'daily_limit', limit: '100.00' } });
    await settleUntil(t, async () => (await paymentRows(t, agent.agentId)).every((p) => p.status === 'succeeded'));
    expect(await paymentRows(t, agent.agentId)).toHaveLength(5);
    expect(before - (await chain.usdcBalance(agent.signerAddress))).toBe(100n * USDC);
    expect(await chain.usdcBalance(payee.address)).toBe(100n * USDC);
  });

  it('insufficient_balance is exact: a payment already on chain but not yet indexed is counted once, so a payment that fits the rest is admitted and one cent more is refused', async () => {
    const payee = await createPayee(t, chain);
    const agent = await createAgent(t, chain, { float: 30n * USDC, policy: { dailyLimit: '1000.00' } });
    const settlement = t.app.get(PaymentSettlement);
    for (let r = await settlement.pollOnce(); r.fromBlock <= r.toBlock; r = await settlement.pollOnce()); // the indexer at head
    expect((await pay(t, agent, { to: payee.handle, amount: '20.00' })).status).toBe(200);
    await waitFor(async () => (await chain.usdcBalance(agent.signerAddress)) === 10n * USDC, { label: 'the first transfer mined' });
    expect((await paymentRows(t, agent.agentId)).map((p) => p.status)).toEqual(['submitted']); // not indexed yet
    expect((await t.http.get('/api/v1/balance').set('X-Api-Key', agent.key)).body).toMatchObject({ balance: '10.00', onChainBalance: '10.00' });
    const over = await pay(t, agent, { to: payee.handle, amount: '10.01' });
    expect(over.status).toBe(403);
    expect(over.body.details).toMatchObject({ rule: 'insufficient_balance', limit: '10.00' });
    expect((await pay(t, agent, { to: payee.handle, amount: '10.00' })).status).toBe(200);
    await settleUntil(t, async () => (await paymentRows(t, agent.agentId)).every((p) => p.status === 'succeeded'));
    expect(await chain.usdcBalance(agent.signerAddress)).toBe(0n);
    expect(await chain.usdcBalance(payee.address)).toBe(30n * USDC);
  });

  it('exact balance under concurrency: with a mined, unindexed payment, two concurrent payments for the whole rest → one admitted, one insufficient_balance', async () => {
    const payee = await createPayee(t, chain);
    const agent = await createAgent(t, chain, { float: 30n * USDC, policy: { dailyLimit: '1000.00' } });
    const settlement = t.app.get(PaymentSettlement);
    for (let r = await settlement.pollOnce(); r.fromBlock <= r.toBlock; r = await settlement.pollOnce()); // the indexer at head
    expect((await pay(t, agent, { to: payee.handle, amount: '20.00' })).status).toBe(200);
    await waitFor(async () => (await chain.usdcBalance(agent.signerAddress)) === 10n * USDC, { label: 'the first transfer mined' });
    const twins = await Promise.all([pay(t, agent, { to: payee.handle, amount: '10.00' }), pay(t, agent, { to: payee.handle, amount: '10.00' })]);
    expect(twins.map((r) => r.status).sort()).toEqual([200, 403]);
    expect(twins.find((r) => r.status === 403)!.body.details).toMatchObject({ rule: 'insufficient_balance' });
    await settleUntil(t, async () => (await paymentRows(t, agent.agentId)).every((p) => p.status === 'succeeded'));
    expect(await paymentRows(t, agent.agentId)).toHaveLength(2);
    expect(await chain.usdcBalance(agent.signerAddress)).toBe(0n);
  });

  it('ten concurrent requests with one Idempotency-Key → one payment, one transfer', async () => {
    const payee = await createPayee(t, chain);
    const agent = await createAgent(t, chain, { float: 500n * USDC, policy: { dailyLimit: '1000.00' } });
    const results = await Promise.all(Array.from({ length: 10 }, () => pay(t, agent, { to: payee.handle, amount: '20.00' }, 'same-key')));
    expect(results.map((r) => r.status)).toEqual(Array(10).fill(200));
    expect(new Set(results.map((r) => r.body.id)).size).toBe(1);
    const rows = await paymentRows(t, agent.agentId);
    expect(rows).toHaveLength(1);
    await settleUntil(t, async () => (await paymentRows(t, agent.agentId))[0].status === 'succeeded');
    expect(await chain.usdcBalance(payee.address)).toBe(20n * USDC);
  });
});
