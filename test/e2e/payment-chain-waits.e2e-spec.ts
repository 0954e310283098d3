import { getQueueToken } from '@nestjs/bullmq';
import { Module, type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { Queue } from 'bullmq';
import { Logger } from 'nestjs-pino';
import { PROCESS_SECRETS } from '../../src/config/secrets';
import { CoreModule } from '../../src/core.module';
import { AUTHORIZATION_CURSOR } from '../../src/modules/agents/signer-balance';
import { PAYMENTS_QUEUE, PaymentsWorkerModule } from '../../src/modules/payments/payments.worker.module';
import { createTestApp, TestApp } from '../support/app';
import { createAgent, createPayee, pay, paymentRows, startRelayerWorker } from '../support/agents';
import { TestChain, USDC } from '../support/chain';
import { waitFor } from '../support/wait';

jest.setTimeout(180_000);

@Module({ imports: [CoreModule.forProcess({ name: 'worker', secrets: PROCESS_SECRETS.worker }), PaymentsWorkerModule] })
class PaymentsOnlyWorkerModule {}

/** The worker's payment jobs (indexer and sweep, as the worker schedules them) in this process, with `env` for it only. */
async function startPaymentsWorker(env: Record<string, string>): Promise<INestApplicationContext> {
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  try {
    const app = await NestFactory.createApplicationContext(PaymentsOnlyWorkerModule, { bufferLogs: true });
    app.useLogger(app.get(Logger));
    await app.init();
    return app;
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

/**
 * Chain waits on the payment path are bounded and never hold up settlement of other payments
 * (docs/architecture.md §18; issue 22, finding 7): a kill-switch cancel whose transaction the node
 * dropped keeps the sweep waiting, while the USDC authorization indexer goes on settling another
 * agent's payment and moving its cursor; the wait ends after its timeout with the payment still at its
 * recovery point (not failed).
 */
describe('chain waits on the payment path', () => {
  let t: TestApp;
  let chain: TestChain;
  let relayer: INestApplicationContext;
  let worker: INestApplicationContext | undefined;

  beforeAll(async () => {
    t = await createTestApp();
    chain = new TestChain();
    relayer = await startRelayerWorker();
  });
  afterAll(async () => {
    await chain?.rpc('evm_setAutomine', [true]);
    await worker?.close();
    await relayer?.close();
    await t?.close();
    chain?.close();
  });

  it('a dropped cancelAuthorization does not stop the usdc-authorizations cursor for another agent; the wait ends at its timeout, the payment still pending', async () => {
    const payee = await createPayee(t, chain);
    const stuck = await createAgent(t, chain, { float: 50n * USDC });
    const other = await createAgent(t, chain, { float: 50n * USDC });
    try {
      // `stuck` pays while nothing is mined, and the node forgets the transfer: signed, broadcast once, unused.
      await chain.rpc('evm_setAutomine', [false]);
      const first = await pay(t, stuck, { to: payee.handle, amount: '10.00' });
      expect(first.body.status).toBe('submitted');
      const [submitted] = await paymentRows(t, stuck.agentId);
      await chain.rpc('anvil_dropTransaction', [submitted.relay_tx_hashes[0]]);

      // The kill switch is on in the worker: its sweep cancels the authorization; the node drops the cancel too.
      worker = await startPaymentsWorker({ AGENTS_ENABLED: 'false', CHAIN_POLL_MS: '200', CHAIN_WAIT_MS: '20000', RELAYER_WAIT_MS: '1000', RPC_TIMEOUT_MS: '1000', PAYMENT_SWEEP_IDLE_SECONDS: '4' });
      const payments = worker.get<Queue>(getQueueToken(PAYMENTS_QUEUE));
      const cancel = await waitFor(
        async () => {
          await payments.add('sweep', {}, { removeOnComplete: true, removeOnFail: true });
          const rows: Array<{ tx_hash: string | null }> = await t.dataSource.query(
            `SELECT tx_hash FROM relayer_transactions WHERE purpose = 'cancel_authorization' AND reference = $1 AND tx_hash IS NOT NULL`,
            [submitted.id],
          );
          return rows[0]?.tx_hash;
        },
        { timeoutMs: 30_000, intervalMs: 1000, label: 'the sweep relays the cancel' },
      );
      await chain.rpc('anvil_dropTransaction', [cancel]);
      await chain.rpc('evm_setAutomine', [true]);
      const [sweep] = await payments.getActive();
      expect(sweep?.name).toBe('sweep');

      // Another agent pays and its transfer is mined: the indexer settles it while the sweep still waits.
      const paid = await pay(t, other, { to: payee.handle, amount: '7.00' });
      expect(paid.body.status).toBe('submitted');
      const receipt = (await chain.provider.getTransactionReceipt((await paymentRows(t, other.agentId))[0].relay_tx_hashes[0]))!;
      await waitFor(async () => (await paymentRows(t, other.agentId))[0].status === 'succeeded', { timeoutMs: 15_000, label: "the other agent's payment settled by the worker's indexer" });
      const [cursor] = await t.dataSource.query(`SELECT block_number::int AS block FROM chain_cursors WHERE name = $1`, [AUTHORIZATION_CURSOR]);
      expect(cursor.block).toBeGreaterThanOrEqual(receipt.blockNumber);
      expect(await sweep.isActive()).toBe(true);

      // The cancel's wait is bounded: the sweep ends, and the payment stays where it was (its authorization may still be used).
      // Completed jobs are removed (removeOnComplete), so their state reads "unknown" afterwards.
      const ended = await waitFor(async () => {
        const state = await payments.getJobState(sweep.id!);
        return state === 'active' ? null : state;
      }, { timeoutMs: 60_000, label: 'the sweep ends at CHAIN_WAIT_MS' });
      expect(['completed', 'unknown']).toContain(ended);
      expect((await paymentRows(t, stuck.agentId))[0]).toMatchObject({ id: submitted.id, status: 'submitted', failure_reason: null });
    } finally {
      await chain.rpc('evm_setAutomine', [true]);
    }
  });
});
