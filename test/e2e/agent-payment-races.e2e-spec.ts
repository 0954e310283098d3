import type { INestApplicationContext } from '@nestjs/common';
import { encodePaymentRequiredHeader } from '@x402/core/http';
import type { PaymentRequirements } from '@x402/core/types';
import { Wallet } from 'ethers';
import { randomUUID } from 'node:crypto';
import { SignerVault } from '../../src/modules/agents/signer-vault.service';
import { PaymentSettlement } from '../../src/modules/payments/payment-settlement.service';
import { PaymentsRepository } from '../../src/modules/payments/payments.repository';
import { createTestAppWith, TestApp } from '../support/app';
import { createAgent, createPayee, pay, paymentRows, settleUntil, startRelayerWorker } from '../support/agents';
import { TestChain, USDC } from '../support/chain';
import { expectError } from '../support/errors';
import { waitFor } from '../support/wait';

jest.setTimeout(120_000);

/**
 * Test seam (STYLE.md: injected by the test): runs `before` ahead of every write that fails a payment
 * in the app it is provided in, i.e. after the caller read the payment and before its write lands.
 */
class HookedPaymentsRepository extends PaymentsRepository {
  static before: ((id: string, reason: string) => Promise<void>) | null = null;

  override async markFailed(id: string, reason: string): Promise<boolean> {
    await HookedPaymentsRepository.before?.(id, reason);
    return super.markFailed(id, reason);
  }

  override async failUnsigned(id: string, reason: string): Promise<boolean> {
    await HookedPaymentsRepository.before?.(id, reason);
    return super.failUnsigned(id, reason);
  }
}

/** Test seam: while `gate` is set, opening an agent's signer waits for it (the payment stays reserved, unsigned). */
class GatedSignerVault extends SignerVault {
  static gate: Promise<void> | null = null;

  override async wallet(agentId: string): Promise<Wallet> {
    if (GatedSignerVault.gate) await GatedSignerVault.gate;
    return super.wallet(agentId);
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
    t = await createTestAppWith((b) => b.overrideProvider(SignerVault).useClass(GatedSignerVault));
    off = await createTestAppWith((b) => b.overrideProvider(PaymentsRepository).useClass(HookedPaymentsRepository), { AGENTS_ENABLED: 'false' });
    chain = new TestChain();
    worker = await startRelayerWorker();
  });
  afterAll(async () => {
    HookedPaymentsRepository.before = null;
    GatedSignerVault.gate = null;
    await worker?.close();
    await off?.close();
    await t?.close();
    chain?.close();
  });
  afterEach(() => {
    HookedPaymentsRepository.before = null;
    GatedSignerVault.gate = null;
  });

  /** Arms the signer gate; the returned function opens it. */
  function holdSigning(): () => void {
    let open!: () => void;
    GatedSignerVault.gate = new Promise<void>((resolve) => (open = resolve));
    return () => {
      GatedSignerVault.gate = null;
      open();
    };
  }

  it('finding 5: the kill switch read a payment unsigned, an enabled api signs and relays it meanwhile: it is never failed agents_disabled, it settles and keeps counting', async () => {
    const payee = await createPayee(t, chain);
    const agent = await createAgent(t, chain, { float: 100n * USDC, policy: { dailyLimit: '100.00' } });
    const releaseSigning = holdSigning();
    // supertest sends on then(): start the request now, it waits at the gate.
    const inFlight = pay(t, agent, { to: payee.handle, amount: '30.00' }).then((r) => r);
    const [reserved] = await waitFor(async () => {
      const rows = await paymentRows(t, agent.agentId);
      return rows.length === 1 ? rows : null;
    }, { label: 'payment reserved' });
    expect(reserved).toMatchObject({ status: 'pending', auth_nonce: null });

    // The kill-switch sweep has read the payment unsigned; before its write lands, the enabled api signs and relays it.
    let answer: Awaited<typeof inFlight> | undefined;
    HookedPaymentsRepository.before = async (id, reason) => {
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
      asset: chain.gateway.usdcAddress,
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
