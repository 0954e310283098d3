import { encodePaymentRequiredHeader } from '@x402/core/http';
import type { PaymentRequirements } from '@x402/core/types';
import { Wallet } from 'ethers';
import { randomUUID } from 'node:crypto';
import { signIntentMandate } from '../../src/modules/mandates/mandate-signing';
import { Injectable } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { TransactionHost } from '../../src/database/transaction';
import { MandateUsageSource } from '../../src/modules/mandates/mandate-usage.port';
import { MandatesRepository } from '../../src/modules/mandates/mandates.repository';
import { MandatesService } from '../../src/modules/mandates/mandates.service';
import { createTestAppWith, TestApp } from '../support/app';
import { createAgent, TestAgent } from '../support/agents';
import { TestChain, USDC } from '../support/chain';
import { sleep } from '../support/wait';

jest.setTimeout(120_000);

/**
 * Test seam (STYLE.md: injected by the test): records, inside the revocation's own transaction right
 * after its UPDATE, the usage of the mandate as that transaction sees it. With the revocation
 * serialised against spends, that is the mandate's final usage: no spend is admitted under it later.
 */
@Injectable()
class RecordingMandatesRepository extends MandatesRepository {
  static usageAtRevoke = new Map<string, bigint>();

  constructor(
    txHost: TransactionHost,
    private readonly moduleRef: ModuleRef,
  ) {
    super(txHost);
  }

  override async revoke(id: string, at: Date): Promise<void> {
    await super.revoke(id, at);
    // The usage through the payments module's port (its table), in this same transaction.
    const usage = this.moduleRef.get(MandateUsageSource, { strict: false });
    RecordingMandatesRepository.usageAtRevoke.set(id, (await usage.usedAmounts([id])).get(id) ?? 0n);
  }
}

/**
 * A mandate revocation racing a spend under that mandate (docs/architecture.md §14; issue 22, finding 8):
 * never both a revocation that succeeded and a spend admitted under the mandate after the revocation
 * committed. Real Postgres; the spends are x402 payments to another server's payTo, which are signed and
 * handed to the agent, so no relay or mining slows the rounds.
 */
describe('mandate revocation racing a spend', () => {
  const ROUNDS = 200;
  /** Agents racing side by side (each agent's spends are serialised by its row lock anyway). */
  const LANES = 4;
  const AMOUNT = 10_000n; // 0.01 USDC
  let t: TestApp;
  let chain: TestChain;
  let agents: TestAgent[];

  beforeAll(async () => {
    t = await createTestAppWith((b) => b.overrideProvider(MandatesRepository).useClass(RecordingMandatesRepository));
    chain = new TestChain();
    agents = [];
    for (let i = 0; i < LANES; i++) {
      agents.push(await createAgent(t, chain, { float: 10n * USDC, policy: { mode: 'mandate', dailyLimit: '1000.00' }, scopes: ['agent:pay', 'agent:mandate', 'agent:balance:read'] }));
    }
  });
  afterAll(async () => {
    await t?.close();
    chain?.close();
  });

  it(`${ROUNDS} rounds of revoke ‖ spend: a revoked mandate's usage never grows after its revocation committed`, async () => {
    const payTo = Wallet.createRandom().address;
    const requirement: PaymentRequirements = { scheme: 'exact', network: 'eip155:31337', asset: chain.usdc.address, amount: AMOUNT.toString(), payTo, maxTimeoutSeconds: 300, extra: {} };
    const paymentRequired = encodePaymentRequiredHeader({ x402Version: 2, resource: { url: 'https://data.example.com/r' }, accepts: [requirement] });
    const mandates = t.app.get(MandatesService);
    const expiresAt = new Date(Date.now() + 3_600_000).toISOString();
    const outcomes = { spendFirst: 0, revokeFirst: 0 };
    const violations: Array<{ round: number; mandateId: string; atRevoke: string; final: string }> = [];

    const lane = async (agent: TestAgent, rounds: number[]) => {
    for (const round of rounds) {
      const terms = { payees: [payTo.toLowerCase()], maxAmountPerPayment: AMOUNT.toString(), totalAmount: AMOUNT.toString(), expiresAt, description: `round ${round}` };
      const created = await t.http.post('/api/v1/mandates').set('X-Api-Key', agent.key).send({ ...terms, credential: await signIntentMandate(agent.owner, 31337, agent.slug, terms) });
      expect(created.status).toBe(200);
      const mandateId: string = created.body.id;

      // The spend's checks before its transaction take some milliseconds; spreading the revocation's start over
      // them lands it before, inside and after the spend's reservation across the rounds.
      const [spend] = await Promise.all([
        t.http.post('/api/v1/x402/settle').set('X-Api-Key', agent.key).set('Idempotency-Key', `race-${randomUUID()}`).send({ paymentRequired }).then((r) => r),
        sleep((round * 7) % 41).then(() => mandates.revokeByOperator(mandateId)),
      ]);
      if (spend.status === 200) {
        expect(spend.body.payment.mandateId).toBe(mandateId);
        outcomes.spendFirst++;
      } else {
        expect([spend.status, spend.body.code]).toEqual([403, 'mandate_required']);
        outcomes.revokeFirst++;
      }
      const atRevoke = RecordingMandatesRepository.usageAtRevoke.get(mandateId);
      const [{ used }] = await t.dataSource.query(
        `SELECT COALESCE(SUM(amount), 0)::text AS used FROM payments WHERE mandate_id = $1 AND status IN ('pending', 'submitted', 'succeeded')`,
        [mandateId],
      );
      if (atRevoke === undefined || BigInt(used) !== atRevoke) violations.push({ round, mandateId, atRevoke: String(atRevoke), final: used });
    }
    };
    await Promise.all(agents.map((agent, i) => lane(agent, Array.from({ length: ROUNDS / LANES }, (_, k) => k * LANES + i))));

    expect(violations).toEqual([]);
    // Both orders happened, so the rounds did race.
    expect(outcomes.spendFirst).toBeGreaterThan(0);
    expect(outcomes.revokeFirst).toBeGreaterThan(0);
  });
});
