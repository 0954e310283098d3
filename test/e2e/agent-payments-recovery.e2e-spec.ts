import { Module, type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { randomUUID } from 'node:crypto';
import { hexlify, id as topicId, randomBytes, zeroPadValue } from 'ethers';
import { PaymentSettlement } from '../../src/modules/payments/payment-settlement.service';
import { PaymentFaultPoint, PaymentFaults } from '../../src/modules/payments/payments.service';
import { ownerDomain, WITHDRAW_TYPES } from '../../src/modules/agents/owner-messages';
import { createTestApp, createTestAppWith, TestApp } from '../support/app';
import { FaultSwitch } from '../support/faults';
import { createAgent, createPayee, createSeller, pay, paymentRows, settleUntil, startRelayerWorker, TestAgent } from '../support/agents';
import { indexUntilStatus, TestChain, USDC } from '../support/chain';
import { PROCESS_SECRETS } from '../../src/config/secrets';
import { CoreModule } from '../../src/core.module';
import { AgentEscrowsModule } from '../../src/modules/agent-escrows/agent-escrows.module';
import { PaymentsModule } from '../../src/modules/payments/payments.module';

/** The payment sweep as the worker process runs it: the worker's secrets only, and the payment modes it loads (src/worker.module.ts). */
@Module({ imports: [CoreModule.forProcess({ name: 'worker', secrets: PROCESS_SECRETS.worker }), PaymentsModule, AgentEscrowsModule] })
class WorkerSweepModule {}

/**
 * Recovery points of an agent payment (docs/architecture.md §5): a crash between "signed" and
 * "broadcast" resumes the same authorization, a relay that cannot go through keeps the payment
 * counting until its authorization expires, the worker's sweep resumes idle payments, and the kill
 * switch fails unsigned payments and cancels signed ones.
 */
describe('agent payment recovery', () => {
  let t: TestApp;
  let off: TestApp;
  let chain: TestChain;
  let worker: INestApplicationContext;
  const faults = new FaultSwitch<PaymentFaultPoint>();

  beforeAll(async () => {
    t = await createTestAppWith([{ provide: PaymentFaults, useValue: faults }]);
    off = await createTestApp({ AGENTS_ENABLED: 'false' });
    chain = new TestChain();
    worker = await startRelayerWorker();
  });
  afterAll(async () => {
    faults.at = null;
    await worker?.close();
    await off?.close();
    await t?.close();
    chain?.close();
  });
  afterEach(() => {
    faults.at = null;
  });

  /** USDC Transfer logs from the signer to `to` since `fromBlock`. */
  async function transfers(agent: TestAgent, to: string, fromBlock: number) {
    return chain.provider.getLogs({
      address: chain.usdc.address,
      fromBlock,
      toBlock: 'latest',
      topics: [topicId('Transfer(address,address,uint256)'), zeroPadValue(agent.signerAddress, 32), zeroPadValue(to, 32)],
    });
  }

  async function crashAt(point: 'after_reserve' | 'after_signed', agent: TestAgent, body: Record<string, unknown>, key: string) {
    faults.at = point;
    const res = await pay(t, agent, body, key);
    faults.at = null;
    expect(res.status).toBe(500);
    return res;
  }

  it('crash between signed and broadcast: the retry resumes the same payment with the same authorization; the chain shows one transfer', async () => {
    const payee = await createPayee(t, chain);
    const agent = await createAgent(t, chain, { float: 100n * USDC, policy: { dailyLimit: '100.00' } });
    const fromBlock = await chain.provider.getBlockNumber();
    const key = `crash-${randomUUID()}`;
    await crashAt('after_signed', agent, { to: payee.handle, amount: '30.00' }, key);
    const [signed] = await paymentRows(t, agent.agentId);
    expect(signed).toMatchObject({ status: 'pending', relay_tx_hashes: [], auth_nonce: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
    expect(await chain.usdc.authorizationState(agent.signerAddress, signed.auth_nonce!)).toBe(false);

    const retry = await pay(t, agent, { to: payee.handle, amount: '30.00' }, key);
    expect(retry.status).toBe(200);
    expect(retry.body).toMatchObject({ id: signed.id, status: 'submitted' });
    const [resumed] = await paymentRows(t, agent.agentId);
    expect(resumed.auth_nonce).toBe(signed.auth_nonce);
    expect(resumed.relay_tx_hashes).toHaveLength(1);
    // A second retry relays nothing new.
    expect((await pay(t, agent, { to: payee.handle, amount: '30.00' }, key)).body.id).toBe(signed.id);
    await settleUntil(t, async () => (await paymentRows(t, agent.agentId))[0].status === 'succeeded');
    expect(await transfers(agent, payee.address, fromBlock)).toHaveLength(1);
    expect(await chain.usdcBalance(payee.address)).toBe(30n * USDC);
    expect(await paymentRows(t, agent.agentId)).toHaveLength(1);
  });

  it('crash right after the reservation: the retry signs once and pays once', async () => {
    const payee = await createPayee(t, chain);
    const agent = await createAgent(t, chain, { float: 100n * USDC });
    const key = `crash-${randomUUID()}`;
    await crashAt('after_reserve', agent, { to: payee.handle, amount: '5.00' }, key);
    expect((await paymentRows(t, agent.agentId))[0]).toMatchObject({ status: 'pending', auth_nonce: null });
    const retries = await Promise.all([1, 2, 3].map(() => pay(t, agent, { to: payee.handle, amount: '5.00' }, key)));
    expect(retries.map((r) => r.status)).toEqual([200, 200, 200]);
    await settleUntil(t, async () => (await paymentRows(t, agent.agentId))[0].status === 'succeeded');
    expect(await chain.usdcBalance(payee.address)).toBe(5n * USDC);
  });

  it('the worker sweep resumes a payment left signed by a crash, without any retry', async () => {
    const payee = await createPayee(t, chain);
    const agent = await createAgent(t, chain, { float: 100n * USDC });
    await crashAt('after_signed', agent, { to: payee.handle, amount: '7.00' }, `crash-${randomUUID()}`);
    expect(await t.app.get(PaymentSettlement).sweepOnce(0)).toBeGreaterThanOrEqual(1);
    expect((await paymentRows(t, agent.agentId))[0].status).toBe('submitted');
    await settleUntil(t, async () => (await paymentRows(t, agent.agentId))[0].status === 'succeeded');
    expect(await chain.usdcBalance(payee.address)).toBe(7n * USDC);
  });

  it('a relay that cannot go through leaves the payment counting toward the limit until its authorization expires; then it fails and frees the window', async () => {
    const payee = await createPayee(t, chain);
    const agent = await createAgent(t, chain, { float: 20n * USDC, policy: { dailyLimit: '30.00' } });
    const key = `stuck-${randomUUID()}`;
    await crashAt('after_signed', agent, { to: payee.handle, amount: '20.00' }, key);

    // The owner takes the float back (signed Withdraw), so the signed transfer would revert.
    const nonce = hexlify(randomBytes(32));
    const deadline = Math.floor(Date.now() / 1000) + 600;
    const signature = await agent.owner.signTypedData(ownerDomain(31337), WITHDRAW_TYPES, { agentId: agent.agentId, amount: 20n * USDC, nonce, deadline });
    const withdrawn = await t.http.post(`/api/v1/agents/${agent.agentId}/withdraw`).send({ amount: '20.00', nonce, deadline, signature });
    expect(withdrawn.status).toBe(200);
    expect(await chain.usdcBalance(agent.signerAddress)).toBe(0n);

    const retry = await pay(t, agent, { to: payee.handle, amount: '20.00' }, key);
    expect(retry.status).toBe(200);
    expect(retry.body.status).toBe('pending');
    await chain.usdc.transfer(agent.owner, agent.signerAddress, 50n * USDC);
    const blocked = await pay(t, agent, { to: payee.handle, amount: '20.00' });
    expect(blocked.status).toBe(403);
    expect(blocked.body).toMatchObject({ code: 'policy_denied', details: { rule: 'daily_limit', used: '20.00' } });

    // Past validBefore by chain time, the sweep settles it as failed (the authorization is dead).
    await chain.rpc('evm_increaseTime', [601]);
    await chain.mine();
    await t.app.get(PaymentSettlement).sweepOnce(0);
    const [stuck] = await paymentRows(t, agent.agentId);
    expect(stuck).toMatchObject({ status: 'failed', failure_reason: 'expired' });
    expect(await chain.usdc.authorizationState(agent.signerAddress, stuck.auth_nonce!)).toBe(false);
    expect((await pay(t, agent, { to: payee.handle, amount: '20.00' })).status).toBe(200);
    expect(await chain.usdcBalance(payee.address)).toBe(20n * USDC);
  });

  it("the worker's sweep (with the worker's own keys) resumes an agent escrow left signed by a crash: the escrow funds once", async () => {
    const seller = await createSeller(t, chain);
    const agent = await createAgent(t, chain, { float: 100n * USDC });
    faults.at = 'after_signed';
    const res = await t.http.post('/api/v1/agent-escrows').set('X-Api-Key', agent.key).set('Idempotency-Key', `esc-crash-${randomUUID()}`).send({ to: seller.handle, amount: '6.00', description: 'swept escrow' });
    faults.at = null;
    expect(res.status).toBe(500);
    const [left] = await paymentRows(t, agent.agentId);
    expect(left.status).toBe('pending');
    expect(left.auth_nonce).not.toBeNull();
    // Before: the worker could not sign the escrow's funding terms (TERMS_SIGNER_PRIVATE_KEY was an api-only key),
    // so every sweep step failed and the agent escrow stayed pending for good (seen in the chaos run, issue 22).
    const sweeper = await NestFactory.createApplicationContext(WorkerSweepModule, { logger: false });
    try {
      expect(await sweeper.get(PaymentSettlement).sweepOnce(0)).toBeGreaterThanOrEqual(1);
    } finally {
      await sweeper.close();
    }
    expect((await paymentRows(t, agent.agentId))[0].status).toBe('submitted');
    const checkoutId = (await t.dataSource.query(`SELECT checkout_session_id::text AS id FROM payments WHERE id = $1`, [left.id]))[0].id as string;
    await indexUntilStatus(t, seller.org, checkoutId, 'funded');
    await settleUntil(t, async () => (await paymentRows(t, agent.agentId))[0].status === 'succeeded');
    expect(await chain.usdcBalance(agent.signerAddress)).toBe(94n * USDC);
  });

  it('kill switch: an unsigned pending payment fails; a signed, unused authorization is cancelled on chain and the payment fails', async () => {
    const payee = await createPayee(t, chain);
    const agent = await createAgent(t, chain, { float: 100n * USDC });
    await crashAt('after_reserve', agent, { to: payee.handle, amount: '3.00' }, `k1-${randomUUID()}`);
    await crashAt('after_signed', agent, { to: payee.handle, amount: '4.00' }, `k2-${randomUUID()}`);
    await off.app.get(PaymentSettlement).sweepOnce(0);
    await settleUntil(off, async () => (await paymentRows(t, agent.agentId)).every((p) => p.status === 'failed'));
    const rows = await paymentRows(t, agent.agentId);
    expect(rows.map((r) => [r.amount, r.status, r.failure_reason])).toEqual([
      ['3000000', 'failed', 'agents_disabled'],
      ['4000000', 'failed', 'cancelled'],
    ]);
    expect(await chain.usdc.authorizationState(agent.signerAddress, rows[1].auth_nonce!)).toBe(true);
    expect(await chain.usdcBalance(payee.address)).toBe(0n);
    const me = await t.http.get('/api/v1/agent').set('X-Api-Key', agent.key);
    expect(me.body.usage.usedToday).toBe('0.00');
  });
});
