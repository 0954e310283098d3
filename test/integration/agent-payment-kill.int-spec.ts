import { ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import type { INestApplicationContext } from '@nestjs/common';
import { id as topicId, zeroPadValue } from 'ethers';
import { createTestApp, TestApp } from '../support/app';
import { createAgent, createPayee, pay, paymentRows, settleUntil, startRelayerWorker } from '../support/agents';
import { requireBuiltCli, TestChain, USDC } from '../support/chain';
import { waitFor } from '../support/wait';
import { freePort } from '../support/processes';

jest.setTimeout(120_000);

const MAIN_JS = join(__dirname, '..', '..', 'dist', 'src', 'main.js');

/**
 * The overspend proof's crash case with a real process kill (docs/architecture.md §5): the compiled api
 * (`node dist/src/main.js`) signs the authorization, commits it, queues the relay and waits; no relayer
 * worker runs, so it is stopped exactly between "signed" and "broadcast", and is killed with SIGKILL
 * there. The retry (another api) resumes the same payment with the same authorization; the chain shows
 * one transfer.
 */
describe('agent payment: api killed between signed and broadcast', () => {
  let t: TestApp;
  let chain: TestChain;
  let api: ChildProcess | undefined;
  let worker: INestApplicationContext | undefined;

  beforeAll(async () => {
    requireBuiltCli();
    t = await createTestApp();
    chain = new TestChain();
  });
  afterAll(async () => {
    if (api && api.exitCode === null) api.kill('SIGKILL');
    await worker?.close();
    await t?.close();
    chain?.close();
  });

  it('SIGKILL after the authorization is stored: the retry resumes it, one transfer on chain', async () => {
    const payee = await createPayee(t, chain);
    const agent = await createAgent(t, chain, { float: 100n * USDC, policy: { dailyLimit: '100.00' } });
    const fromBlock = await chain.provider.getBlockNumber();

    const port = await freePort();
    const output: string[] = [];
    api = spawn(process.execPath, [MAIN_JS], { env: { ...process.env, PORT: String(port), LOG_LEVEL: 'warn', RELAYER_WAIT_MS: '120000', PAYMENT_SWEEP_IDLE_SECONDS: '180' }, stdio: ['ignore', 'pipe', 'pipe'] });
    api.stdout!.on('data', (b: Buffer) => output.push(b.toString()));
    api.stderr!.on('data', (b: Buffer) => output.push(b.toString()));
    const exited = new Promise((resolve) => api!.on('exit', resolve));
    await waitFor(() => fetch(`http://127.0.0.1:${port}/health/live`).then((r) => r.ok).catch(() => false), { timeoutMs: 30_000, intervalMs: 100, label: `api up: ${output.join('')}` });

    const inFlight = fetch(`http://127.0.0.1:${port}/api/v1/payments`, {
      method: 'POST',
      headers: { 'X-Api-Key': agent.key, 'Idempotency-Key': 'killed-1', 'Content-Type': 'application/json' },
      body: JSON.stringify({ to: payee.handle, amount: '40.00' }),
    }).catch((err: Error) => err);
    await waitFor(async () => {
      const [row] = await paymentRows(t, agent.agentId);
      if (!row?.auth_nonce) return false;
      const queued = await t.dataSource.query(`SELECT status FROM relayer_transactions WHERE reference = $1`, [row.id]);
      return queued.length === 1 && queued[0].status === 'queued';
    }, { timeoutMs: 30_000, intervalMs: 20, label: 'payment signed and its relay queued' });
    api.kill('SIGKILL');
    await exited;
    // The client never got an answer (the socket died with the process).
    const outcome = await inFlight;
    expect(outcome).toMatchObject({ name: 'TypeError', message: 'fetch failed' });

    const [signed] = await paymentRows(t, agent.agentId);
    expect(signed).toMatchObject({ status: 'pending', relay_tx_hashes: [] });
    expect(await chain.usdc.authorizationState(agent.signerAddress, signed.auth_nonce!)).toBe(false);

    // The relayer comes back (it may also send the dead api's queued relay: relayer transactions are disposable).
    worker = await startRelayerWorker();
    const retry = await pay(t, agent, { to: payee.handle, amount: '40.00' }, 'killed-1');
    expect(retry.status).toBe(200);
    expect(retry.body.id).toBe(signed.id);
    const [resumed] = await paymentRows(t, agent.agentId);
    expect(resumed.auth_nonce).toBe(signed.auth_nonce);
    await settleUntil(t, async () => (await paymentRows(t, agent.agentId))[0].status === 'succeeded');

    const transfers = await chain.provider.getLogs({
      address: chain.usdc.address,
      fromBlock,
      toBlock: 'latest',
      topics: [topicId('Transfer(address,address,uint256)'), zeroPadValue(agent.signerAddress, 32), zeroPadValue(payee.address, 32)],
    });
    expect(transfers).toHaveLength(1);
    expect(await chain.usdcBalance(payee.address)).toBe(40n * USDC);
    expect(await paymentRows(t, agent.agentId)).toHaveLength(1);
  });
});
