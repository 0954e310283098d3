import { getQueueToken } from '@nestjs/bullmq';
import { Module, type INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { Queue } from 'bullmq';
import { Logger } from 'nestjs-pino';
import { PROCESS_SECRETS } from '../../src/config/secrets';
import { CoreModule } from '../../src/core.module';
import { AgentEscrowsModule } from '../../src/modules/agent-escrows/agent-escrows.module';
import { AUTHORIZATION_CURSOR } from '../../src/chain/chain-cursors.repository';
import { PAYMENTS_QUEUE, PaymentsWorkerModule } from '../../src/modules/payments/payments.worker.module';
import { createTestApp, TestApp } from '../support/app';
import { createAgent, createPayee, pay, paymentRows, startRelayerWorker } from '../support/agents';
import { TestChain, USDC } from '../support/chain';
import { waitFor } from '../support/wait';
import { isolatedWebhookEnv, IsolatedEnv } from '../support/webhook-env';

jest.setTimeout(180_000);

// The escrow mode's handler too: a process that settles payments refuses to start without every mode (issue 28).
@Module({ imports: [CoreModule.forProcess({ name: 'worker', secrets: PROCESS_SECRETS.worker }), PaymentsWorkerModule, AgentEscrowsModule] })
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
 * (docs/architecture.md §18; issue 22, finding 7): a kill-switch cancel that the chain does not mine
 * (the next block's base fee is above RELAYER_MAX_FEE_GWEI, so no relayer transaction fits in it;
 * the relayer resends dropped transactions itself, so a dropped one would not stay stuck) keeps the
 * sweep waiting, while the USDC authorization indexer, on its own queue, goes on settling another
 * agent's payment and moving its cursor; the wait ends after its timeout with the payment still at
 * its recovery point (not failed).
 */
describe('chain waits on the payment path', () => {
  let t: TestApp;
  let chain: TestChain;
  let relayer: INestApplicationContext;
  let worker: INestApplicationContext | undefined;

  let iso: IsolatedEnv;

  beforeAll(async () => {
    // A database of this file's own: the kill-switch sweep below cancels every idle payment it finds,
    // and payments earlier files left behind (in the run's shared database) would each hold it for
    // CHAIN_WAIT_MS with nothing mined, so its cancel here came too late in a full run.
    iso = await isolatedWebhookEnv('paywait');
    Object.assign(process.env, iso.env);
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
    await iso?.drop();
  });

  it('a cancelAuthorization the chain does not mine does not stop the usdc-authorizations cursor for another agent; the wait ends at its timeout, the payment still submitted', async () => {
    const payee = await createPayee(t, chain);
    const stuck = await createAgent(t, chain, { float: 50n * USDC });
    const other = await createAgent(t, chain, { float: 50n * USDC });
    const submitter = await chain.wallet({ eth: true });
    try {
      // `stuck` pays while nothing is mined: signed, broadcast, unused.
      await chain.rpc('evm_setAutomine', [false]);
      const first = await pay(t, stuck, { to: payee.handle, amount: '10.00' });
      expect(first.body.status).toBe('submitted');
      const [submitted] = await paymentRows(t, stuck.agentId);
      // Its transfer leaves the pool and the relayer gives it up (as after a fill of its nonce), so nothing
      // resends it and its authorization stays unused: the kill switch may cancel it.
      await chain.rpc('anvil_dropTransaction', [submitted.relay_tx_hashes[0]]);
      await waitFor(async () => (await chain.provider.getTransaction(submitted.relay_tx_hashes[0])) === null, { label: 'the transfer dropped' });
      await t.dataSource.query(`UPDATE relayer_transactions SET status = 'failed', error = 'dropped; given up (test)' WHERE reference = $1`, [submitted.id]);

      // The kill switch is on in the worker: its sweep relays the cancel of that authorization and waits for it.
      worker = await startPaymentsWorker({ AGENTS_ENABLED: 'false', CHAIN_POLL_MS: '200', CHAIN_WAIT_MS: '20000', RELAYER_WAIT_MS: '1000', RPC_TIMEOUT_MS: '1000', PAYMENT_SWEEP_IDLE_SECONDS: '4' });
      const payments = worker.get<Queue>(getQueueToken(PAYMENTS_QUEUE));
      await waitFor(
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
      const sweep = await waitFor(async () => (await payments.getActive()).find((j) => j.name === 'sweep'), { label: 'the sweep waiting on the cancel' });

      // Another agent pays; its authorization is used by a transaction that pays the high base fee
      // (anyone may submit an EIP-3009 authorization), mined in a block no relayer transaction fits in.
      const paid = await pay(t, other, { to: payee.handle, amount: '7.00' });
      expect(paid.body.status).toBe('submitted');
      const [auth]: Array<{ from_address: string; to_address: string; amount: string; auth_nonce: string; auth_valid_before: string; auth_signature: string }> = await t.dataSource.query(
        `SELECT from_address, to_address, amount::text, auth_nonce, auth_valid_before::text, auth_signature FROM payments WHERE agent_id = $1`,
        [other.agentId],
      );
      const data = chain.usdc.encodeTransferWithAuthorization({
        from: auth.from_address,
        to: auth.to_address,
        value: BigInt(auth.amount),
        validAfter: 0n,
        validBefore: BigInt(auth.auth_valid_before),
        nonce: auth.auth_nonce,
        signature: auth.auth_signature,
      });
      const direct = await submitter.sendTransaction({ to: chain.usdc.address, data, gasLimit: 200_000n, maxFeePerGas: 5_000n * 10n ** 9n, maxPriorityFeePerGas: 10n ** 9n });
      await chain.rpc('anvil_setNextBlockBaseFeePerGas', ['0x' + (1_000n * 10n ** 9n).toString(16)]);
      await chain.mine();
      const receipt = (await chain.provider.getTransactionReceipt(direct.hash))!;
      expect(receipt.status).toBe(1);
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
      // Leave no relayer transaction pending for the suites after this one: a cheap block mines them.
      await chain.rpc('anvil_setNextBlockBaseFeePerGas', ['0x1']);
      await chain.mine();
      await chain.rpc('evm_setAutomine', [true]);
    }
  });
});
