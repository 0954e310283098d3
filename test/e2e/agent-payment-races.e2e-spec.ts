import type { INestApplicationContext } from '@nestjs/common';
import { encodePaymentRequiredHeader } from '@x402/core/http';
import type { PaymentRequirements } from '@x402/core/types';
import { Wallet } from 'ethers';
import { randomUUID } from 'node:crypto';
import { AgentsService } from '../../src/modules/agents/agents.service';
import { RelayerService, type RelayRequest } from '../../src/chain/relayer/relayer.service';
import { PaymentSettlement } from '../../src/modules/payments/payment-settlement.service';
import { PaymentsRepository } from '../../src/modules/payments/payments.repository';
import { createTestAppWith, TestApp } from '../support/app';
import { createAgent, createPayee, pay, paymentRows, settleUntil, startRelayerWorker } from '../support/agents';
import { TestChain, USDC } from '../support/chain';
import { expectError } from '../support/errors';
import { waitFor } from '../support/wait';

jest.setTimeout(120_000);

/** A latch the test closes and opens; callers pass once it is open. */
class Gate {
  private opened: Promise<void> | null = null;
  private openFn: () => void = () => {};

  close(): void {
    this.opened = new Promise<void>((resolve) => (this.openFn = resolve));
  }

  open(): void {
    this.opened = null;
    this.openFn();
  }

  async pass(): Promise<void> {
    if (this.opened) await this.opened;
  }
}

const signing = new Gate();
const relaying = new Gate();

/**
 * Test seam (STYLE.md: injected by the test, never a field of a production class): in the app it is
 * provided in, storing a signed authorization waits while `signing` is closed (the payment stays
 * reserved and unsigned in Postgres), and `beforeFail` runs ahead of every write that fails a payment,
 * i.e. after the caller read the payment and before its write lands.
 */
class GatedPaymentsRepository extends PaymentsRepository {
  static beforeFail: ((id: string, reason: string) => Promise<void>) | null = null;

  override async storeAuthorization(id: string, auth: { nonce: string; validBefore: number; signature: string }): Promise<boolean> {
    await signing.pass();
    return super.storeAuthorization(id, auth);
  }

  override async markFailed(id: string, reason: string): Promise<boolean> {
    await GatedPaymentsRepository.beforeFail?.(id, reason);
    return super.markFailed(id, reason);
  }

  override async failUnsigned(id: string, reason: string): Promise<boolean> {
    await GatedPaymentsRepository.beforeFail?.(id, reason);
    return super.failUnsigned(id, reason);
  }
}

/** Test seam: while `relaying` is closed, relaying a payment (purpose "payment") waits; the payment stays signed, not broadcast. */
class GatedRelayerService extends RelayerService {
  override async relay(req: RelayRequest): Promise<{ relayTxId: string; txHash: string }> {
    if (req.purpose === 'payment') await relaying.pass();
    return super.relay(req);
  }
}

/**
 * Interleavings of an agent payment's recovery points with the kill switch, pause and signer disable
 * (docs/architecture.md §13, §18; issue 22 findings 5 and 6). The interleavings are forced with seams the
 * test provides in its own apps, never with fields of production classes.
 */
describe('agent payment races', () => {
  let t: TestApp;
  let off: TestApp;
  let chain: TestChain;
  let worker: INestApplicationContext;

  beforeAll(async () => {
    t = await createTestAppWith((b) => b.overrideProvider(PaymentsRepository).useClass(GatedPaymentsRepository).overrideProvider(RelayerService).useClass(GatedRelayerService));
    off = await createTestAppWith((b) => b.overrideProvider(PaymentsRepository).useClass(GatedPaymentsRepository), { AGENTS_ENABLED: 'false' });
    chain = new TestChain();
    worker = await startRelayerWorker();
  });
  afterAll(async () => {
    GatedPaymentsRepository.beforeFail = null;
    signing.open();
    relaying.open();
    await worker?.close();
    await off?.close();
    await t?.close();
    chain?.close();
  });
  afterEach(() => {
    GatedPaymentsRepository.beforeFail = null;
    signing.open();
    relaying.open();
  });

  /** Closes `gate`; the returned function opens it again. */
  function hold(gate: Gate): () => void {
    gate.close();
    return () => gate.open();
  }

  /**
   * Two payments of one agent in flight: `signed` has its authorization stored and waits to be relayed;
   * `unsigned` is reserved and waits to be signed. Both requests are running when this returns.
   */
  async function signedAndUnsigned(agent: Awaited<ReturnType<typeof createAgent>>, payeeHandle: string) {
    const releaseRelay = hold(relaying);
    const signedReq = pay(t, agent, { to: payeeHandle, amount: '10.00' }).then((r) => r);
    const signed = await waitFor(async () => (await paymentRows(t, agent.agentId)).find((r) => r.auth_nonce !== null), { label: 'first payment signed' });
    const releaseSigning = hold(signing);
    const unsignedReq = pay(t, agent, { to: payeeHandle, amount: '5.00' }).then((r) => r);
    const unsigned = await waitFor(async () => (await paymentRows(t, agent.agentId)).find((r) => r.id !== signed.id), { label: 'second payment reserved' });
    expect(unsigned).toMatchObject({ status: 'pending', auth_nonce: null });
    return {
      signed,
      unsigned,
      release: async () => {
        releaseSigning();
        releaseRelay();
        return { signedAnswer: await signedReq, unsignedAnswer: await unsignedReq };
      },
    };
  }

  it('finding 6: pausing an agent fails its unsigned pending payments agent_paused; a signed one still settles', async () => {
    const payee = await createPayee(t, chain);
    const agent = await createAgent(t, chain, { float: 100n * USDC, policy: { dailyLimit: '100.00' } });
    const { signed, unsigned, release } = await signedAndUnsigned(agent, payee.handle);

    await t.app.get(AgentsService).setPaused(agent.agentId, true);
    const rows = new Map((await paymentRows(t, agent.agentId)).map((r) => [r.id, r]));
    expect(rows.get(unsigned.id)).toMatchObject({ status: 'failed', failure_reason: 'agent_paused', auth_nonce: null });
    expect(rows.get(signed.id)).toMatchObject({ status: 'pending', auth_nonce: signed.auth_nonce });

    const { signedAnswer, unsignedAnswer } = await release();
    expect(unsignedAnswer.body).toMatchObject({ id: unsigned.id, status: 'failed', failureReason: 'agent_paused' });
    expect(signedAnswer.body).toMatchObject({ id: signed.id, status: 'submitted' });
    // The sweep does not revive it either.
    await t.app.get(PaymentSettlement).sweepOnce(0);
    await settleUntil(t, async () => (await paymentRows(t, agent.agentId)).find((r) => r.id === signed.id)!.status === 'succeeded');
    expect((await paymentRows(t, agent.agentId)).find((r) => r.id === unsigned.id)).toMatchObject({ status: 'failed', failure_reason: 'agent_paused', auth_nonce: null });
    expect(await chain.usdcBalance(payee.address)).toBe(10n * USDC);
  });

  it('finding 6: disabling the signer fails its unsigned pending payments signer_disabled; a signed one is not failed early: the float went back to the owner, so it expires', async () => {
    const payee = await createPayee(t, chain);
    const agent = await createAgent(t, chain, { float: 100n * USDC, policy: { dailyLimit: '100.00' } });
    const { signed, unsigned, release } = await signedAndUnsigned(agent, payee.handle);

    const disabled = await t.app.get(AgentsService).setSignerEnabled(agent.agentId, false);
    expect(disabled.sweepTxHash).toMatch(/^0x[0-9a-f]{64}$/);
    const rows = new Map((await paymentRows(t, agent.agentId)).map((r) => [r.id, r]));
    expect(rows.get(unsigned.id)).toMatchObject({ status: 'failed', failure_reason: 'signer_disabled', auth_nonce: null });
    expect(rows.get(signed.id)).toMatchObject({ status: 'pending' });

    const { signedAnswer, unsignedAnswer } = await release();
    expect(unsignedAnswer.body).toMatchObject({ id: unsigned.id, status: 'failed', failureReason: 'signer_disabled' });
    // Its transfer would revert now (the float was swept): it stays pending and counting, not failed.
    expect(signedAnswer.body).toMatchObject({ id: signed.id, status: 'pending' });
    expect((await t.http.get('/api/v1/agent').set('X-Api-Key', agent.key)).body.usage.usedToday).toBe('10.00');
    await chain.rpc('evm_increaseTime', [601]);
    await chain.mine();
    await t.app.get(PaymentSettlement).sweepOnce(0);
    const after = new Map((await paymentRows(t, agent.agentId)).map((r) => [r.id, r]));
    expect(after.get(signed.id)).toMatchObject({ status: 'failed', failure_reason: 'expired' });
    expect(after.get(unsigned.id)).toMatchObject({ status: 'failed', failure_reason: 'signer_disabled' });
    expect(await chain.usdcBalance(payee.address)).toBe(0n);
  });

  it('finding 5: the kill switch read a payment unsigned, an enabled api signs and relays it meanwhile: it is never failed agents_disabled, it settles and keeps counting', async () => {
    const payee = await createPayee(t, chain);
    const agent = await createAgent(t, chain, { float: 100n * USDC, policy: { dailyLimit: '100.00' } });
    const releaseSigning = hold(signing);
    // supertest sends on then(): start the request now, it waits at the gate.
    const inFlight = pay(t, agent, { to: payee.handle, amount: '30.00' }).then((r) => r);
    const [reserved] = await waitFor(async () => {
      const rows = await paymentRows(t, agent.agentId);
      return rows.length === 1 ? rows : null;
    }, { label: 'payment reserved' });
    expect(reserved).toMatchObject({ status: 'pending', auth_nonce: null });

    // The kill-switch sweep has read the payment unsigned; before its write lands, the enabled api signs and relays it.
    let answer: Awaited<typeof inFlight> | undefined;
    GatedPaymentsRepository.beforeFail = async (id, reason) => {
      if (id !== reserved.id || reason !== 'agents_disabled' || answer) return;
      releaseSigning();
      answer = await inFlight;
    };
    await off.app.get(PaymentSettlement).sweepOnce(0);
    expect(answer?.body).toMatchObject({ id: reserved.id, status: 'submitted' });

    const [after] = await paymentRows(t, agent.agentId);
    expect(after.failure_reason).not.toBe('agents_disabled');
    expect(after.status).not.toBe('failed');
    expect(after.auth_nonce).toMatch(/^0x[0-9a-f]{64}$/);
    // Still counted: the authorization was broadcast and is moving.
    expect((await t.http.get('/api/v1/agent').set('X-Api-Key', agent.key)).body.usage.usedToday).toBe('30.00');
    await settleUntil(t, async () => (await paymentRows(t, agent.agentId))[0].status === 'succeeded');
    expect(await chain.usdcBalance(payee.address)).toBe(30n * USDC);
    expect((await t.http.get('/api/v1/agent').set('X-Api-Key', agent.key)).body.usage.usedToday).toBe('30.00');
  });

  it('finding 5: x402 settle never hands out the header of a failed payment (its authorization is dead)', async () => {
    const agent = await createAgent(t, chain, { float: 20n * USDC, policy: { dailyLimit: '100.00' } });
    const requirement: PaymentRequirements = {
      scheme: 'exact',
      network: 'eip155:31337',
      asset: chain.usdc.address,
      amount: '1000000',
      payTo: Wallet.createRandom().address,
      maxTimeoutSeconds: 300,
      extra: {},
    };
    const paymentRequired = encodePaymentRequiredHeader({ x402Version: 2, resource: { url: 'https://data.example.com/r' }, accepts: [requirement] });
    const key = `x402-${randomUUID()}`;
    const settle = () => t.http.post('/api/v1/x402/settle').set('X-Api-Key', agent.key).set('Idempotency-Key', key).send({ paymentRequired });
    const first = await settle();
    expect(first.status).toBe(200);
    expect(first.body.header.value).toEqual(expect.any(String));

    // Past validBefore by chain time and unused: the sweep fails it (expired).
    await chain.rpc('evm_increaseTime', [601]);
    await chain.mine();
    await t.app.get(PaymentSettlement).sweepOnce(0);
    expect((await paymentRows(t, agent.agentId))[0]).toMatchObject({ status: 'failed', failure_reason: 'expired' });

    const again = await settle();
    expect(expectError(again, 409, 'invalid_request')).toMatchObject({ status: 'failed', failureReason: 'expired', paymentId: first.body.payment.id });
    expect(again.body.header).toBeUndefined();
  });
});
