import type { INestApplicationContext } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { Wallet } from 'ethers';
import { RelayerService } from '../../src/chain/relayer/relayer.service';
import { startRelayerWorker } from '../support/agents';
import { createTestApp, type TestApp } from '../support/app';
import { TestChain } from '../support/chain';
import { RpcGate } from '../support/rpc-gate';
import { waitFor } from '../support/wait';

jest.setTimeout(180_000);

/**
 * Issue 29 finding 7: a broadcast the node accepted but did not answer (timeout) is not a refusal, and
 * stored bytes the node refuses are not proof that their nonce was used: the relayer checks
 * getTransactionCount(relayer, 'latest') and its stored hashes before signing the payload at a new
 * nonce. The relayer worker talks to anvil through an RPC gate that hands eth_sendRawTransaction to
 * anvil and never answers, and fails eth_getTransactionByHash.
 */
describe('a send whose outcome is unknown goes out once (issue 29 finding 7)', () => {
  let t: TestApp;
  let chain: TestChain;
  let gate: RpcGate;
  let worker: INestApplicationContext;

  beforeAll(async () => {
    t = await createTestApp({ RELAYER_WAIT_MS: '4000' });
    chain = new TestChain();
    gate = await RpcGate.start(process.env.RPC_URL!);
    const saved = { RPC_URL: process.env.RPC_URL, RPC_TIMEOUT_MS: process.env.RPC_TIMEOUT_MS };
    Object.assign(process.env, { RPC_URL: gate.url, RPC_TIMEOUT_MS: '1000' });
    try {
      worker = await startRelayerWorker();
    } finally {
      Object.assign(process.env, saved);
    }
  });
  afterEach(() => gate.clearMethodRules());
  afterAll(async () => {
    await worker?.close();
    await gate?.stop();
    await t?.close();
    chain?.close();
  });

  it('issue 29 finding 3: a node error while estimating gas (-32603 "header not found") leaves the relay queued; the tender sends it once the node answers', async () => {
    const relayer = t.app.get(RelayerService);
    const to = Wallet.createRandom().address;
    const reference = randomUUID();
    gate.answerMethod('eth_estimateGas', { kind: 'error', code: -32603, message: 'header not found' });
    const outcome = await relayer.relay({ to, data: '0xabcd', purpose: 'test-estimate', reference }).catch((err: Error) => err);
    // Proof of the fault: the estimate was refused by the gate, and the relay did not broadcast.
    expect(gate.hits.get('eth_estimateGas')).toBeGreaterThanOrEqual(1);
    expect(outcome).toBeInstanceOf(Error);
    const [row] = await t.dataSource.query(`SELECT id, status FROM relayer_transactions WHERE purpose = 'test-estimate' AND reference = $1`, [reference]);
    expect(row.status).toBe('queued');
    gate.clearMethodRules();
    await waitFor(async () => (await t.dataSource.query(`SELECT status FROM relayer_transactions WHERE id = $1`, [row.id]))[0].status === 'broadcast', {
      timeoutMs: 30_000,
      label: 'the tender sent the queued relay',
    });
    await waitFor(async () => (await chain.provider.getTransactionCount(to)) === 0 && (await chain.provider.getBalance(to)) === 0n && (await t.dataSource.query(`SELECT tx_hash FROM relayer_transactions WHERE id = $1`, [row.id]))[0].tx_hash !== null, { timeoutMs: 10_000, label: 'hash stored' });
    const [{ tx_hash }] = await t.dataSource.query(`SELECT tx_hash FROM relayer_transactions WHERE id = $1`, [row.id]);
    expect((await chain.provider.waitForTransaction(tx_hash, 1, 30_000))!.status).toBe(1);
  });

  it('the node took the bytes and timed out: a retry of the intent sends no second transaction', async () => {
    const relayer = t.app.get(RelayerService);
    const to = Wallet.createRandom().address;
    const reference = randomUUID();
    const req = { to, data: '0x1234', purpose: 'test-unsure', reference };
    const count0 = await chain.provider.getTransactionCount(chain.relayer.address, 'latest');
    gate.answerMethod('eth_sendRawTransaction', { kind: 'forward-then-hang' });
    gate.answerMethod('eth_getTransactionByHash', { kind: 'error', code: -32603, message: 'header not found' });
    await relayer.relay(req).catch((err: Error) => err);
    // Proof of the fault: the node took the bytes (anvil mined them) while the broadcast got no answer.
    expect(gate.hits.get('eth_sendRawTransaction')).toBeGreaterThanOrEqual(1);
    await waitFor(async () => (await chain.provider.getTransactionCount(chain.relayer.address, 'latest')) === count0 + 1, { timeoutMs: 30_000, label: 'the first bytes mined' });
    // The broadcast answers again (anvil refuses the mined bytes: nonce too low); lookups by hash still fail.
    // A caller retries the same intent.
    gate.clearMethodRules();
    gate.answerMethod('eth_getTransactionByHash', { kind: 'error', code: -32603, message: 'header not found' });
    await relayer.relay(req).catch((err: Error) => err);
    await waitFor(
      async () => (await t.dataSource.query(`SELECT count(*)::int AS n FROM relayer_transactions WHERE purpose = 'test-unsure' AND reference = $1 AND status = 'broadcast'`, [reference]))[0].n === 1,
      { timeoutMs: 30_000, label: 'the relay recorded as broadcast (its mined hash)' },
    );
    gate.clearMethodRules();
    await chain.mine();
    // One transaction of this payload on chain, from one row.
    const head = await chain.provider.getBlockNumber();
    let sent = 0;
    for (let b = head; b >= 0 && b > head - 30; b--) {
      const block = await chain.provider.getBlock(b, true);
      for (const tx of block!.prefetchedTransactions) if (tx.to === to) sent++;
    }
    expect(sent).toBe(1);
    expect(await chain.provider.getTransactionCount(chain.relayer.address, 'latest')).toBe(count0 + 1);
    const rows = await t.dataSource.query(`SELECT status FROM relayer_transactions WHERE purpose = 'test-unsure' AND reference = $1`, [reference]);
    expect(rows).toEqual([{ status: 'broadcast' }]);
  });
});
