import { Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { randomUUID } from 'node:crypto';
import { WorkerModule } from '../../src/worker.module';
import { AgentEscrowsModule } from '../../src/modules/agent-escrows/agent-escrows.module';
import { PaymentSettlement } from '../../src/modules/payments/payment-settlement.service';
import { PaymentFaultPoint, PaymentFaults } from '../../src/modules/payments/payments.service';
import { PaymentModes, UnknownPaymentModeError } from '../../src/modules/payments/payment-modes';
import { createAgent, createSeller, paymentRows, useAgentStack } from '../support/agents';
import type { TestApp } from '../support/app';
import { TestChain, USDC } from '../support/chain';
import { FaultSwitch } from '../support/faults';

/** A module standing in for AgentEscrowsModule: a worker built without the escrow mode's handler. */
@Module({})
class NoAgentEscrowsModule {}

/**
 * Issue 28 item 2: payment modes fail closed. There is no default "transfer to toAddress": a process
 * that settles payments (the worker here) without a mode's handler refuses to start, and its sweep,
 * run anyway, signs and relays nothing (for an escrow payment that address is the seller: a plain
 * transfer would skip the escrow).
 */
describe('payment modes fail closed (issue 28 item 2)', () => {
  let t: TestApp;
  let chain: TestChain;
  const faults = new FaultSwitch<PaymentFaultPoint>();
  useAgentStack({ overrides: [{ provide: PaymentFaults, useValue: faults }] }, (s) => ({ t, chain } = s));

  it('a worker built without the escrow handler refuses to start, and its sweep moves nothing for a signed escrow payment', async () => {
    const seller = await createSeller(t, chain);
    const agent = await createAgent(t, chain, { float: 50n * USDC, policy: { dailyLimit: '100.00' } });
    // An agent escrow stopped right after its authorization was signed (recovery point "signed", not relayed).
    faults.at = 'after_signed';
    const res = await t.http.post('/api/v1/agent-escrows').set('X-Api-Key', agent.key).set('Idempotency-Key', `esc-${randomUUID()}`).send({ to: seller.handle, amount: '20.00', description: 'Logo' });
    faults.at = null;
    expect(res.status).toBe(500);
    const [payment] = await paymentRows(t, agent.agentId);
    expect(payment).toMatchObject({ status: 'pending', auth_nonce: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
    const sellerBefore = await chain.usdcBalance(seller.wallet.address);
    const signerBefore = await chain.usdcBalance(agent.signerAddress);

    const moduleRef = await Test.createTestingModule({ imports: [WorkerModule] }).overrideModule(AgentEscrowsModule).useModule(NoAgentEscrowsModule).compile();
    const worker = moduleRef;
    try {
      await expect(worker.init()).rejects.toThrow(/payment modes without a handler in this process: escrow/);
      expect(moduleRef.get(PaymentModes).missing()).toEqual(['escrow']);
      expect(() => moduleRef.get(PaymentModes).get('escrow')).toThrow(UnknownPaymentModeError);
      // Its sweep, run anyway (every idle payment), refuses the escrow payment: nothing relayed, nothing moved.
      await moduleRef.get(PaymentSettlement).sweepOnce(0);
    } finally {
      await worker.close().catch(() => undefined);
    }
    const relays: Array<{ purpose: string }> = await t.dataSource.query(`SELECT purpose FROM relayer_transactions WHERE reference = $1`, [payment.id]);
    expect(relays).toEqual([]);
    expect(await chain.usdc.authorizationState(agent.signerAddress, payment.auth_nonce!)).toBe(false);
    expect(await chain.usdcBalance(seller.wallet.address)).toBe(sellerBefore);
    expect(await chain.usdcBalance(agent.signerAddress)).toBe(signerBefore);
    expect((await paymentRows(t, agent.agentId))[0]).toMatchObject({ status: 'pending', relay_tx_hashes: [] });
  });

  it('the api and the full worker hold a handler for every mode', async () => {
    expect(t.app.get(PaymentModes).missing()).toEqual([]);
    const moduleRef = await Test.createTestingModule({ imports: [WorkerModule] }).compile();
    expect(moduleRef.get(PaymentModes).missing()).toEqual([]);
    await moduleRef.close().catch(() => undefined);
  });
});
