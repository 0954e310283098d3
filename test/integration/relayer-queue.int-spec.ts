import { randomUUID } from 'node:crypto';
import type { INestApplicationContext } from '@nestjs/common';
import { Interface } from 'ethers';
import { TestUSDCArtifact } from '@lib/contracts';
import { ChainTxError } from '@lib/chain';
import { RelayerService } from '../../src/chain/relayer/relayer.service';
import { createTestApp, TestApp } from '../support/app';
import { startRelayerWorker } from '../support/agents';
import { TestChain } from '../support/chain';

const USDC_IFACE = new Interface(TestUSDCArtifact.abi);

/** The one relayer queue (docs/architecture.md §5): nonces allocated in Postgres, one send at a time across workers. */
describe('relayer queue', () => {
  let t: TestApp;
  let chain: TestChain;
  let workers: INestApplicationContext[];

  beforeAll(async () => {
    t = await createTestApp();
    chain = new TestChain();
    // Two workers, as two replicas would run.
    workers = [await startRelayerWorker(), await startRelayerWorker()];
  });
  afterAll(async () => {
    for (const w of workers ?? []) await w.close();
    await t?.close();
    chain?.close();
  });

  const relayer = () => t.app.get(RelayerService);
  const harmless = (i: number) => ({ to: chain.usdc.address, data: USDC_IFACE.encodeFunctionData('approve', [chain.gateway.escrowAddress, BigInt(i)]), purpose: 'test', reference: `r${i}-${randomUUID()}` }); // each call its own intent (one live relay per intent, DESIGN §22)

  it('30 concurrent relays through two workers get distinct consecutive nonces and are all mined', async () => {
    const start = await chain.provider.getTransactionCount(chain.relayer.address, 'pending');
    const results = await Promise.all(Array.from({ length: 30 }, (_, i) => relayer().relay(harmless(i + 1))));
    const nonces = await Promise.all(results.map(async (r) => (await chain.provider.getTransaction(r.txHash))!.nonce));
    expect([...nonces].sort((a, b) => a - b)).toEqual(Array.from({ length: 30 }, (_, i) => start + i));
    for (const r of results) expect((await chain.provider.waitForTransaction(r.txHash))!.status).toBe(1);
    const rows: Array<{ nonce: string; status: string }> = await t.dataSource.query(
      `SELECT nonce::text, status FROM relayer_transactions WHERE id = ANY($1)`,
      [results.map((r) => r.relayTxId)],
    );
    expect(new Set(rows.map((r) => r.nonce)).size).toBe(30);
    expect(rows.every((r) => r.status === 'broadcast')).toBe(true);
  });

  it('a call that would revert fails with the decoded error and uses no nonce', async () => {
    const before = await chain.provider.getTransactionCount(chain.relayer.address, 'pending');
    const bad = { to: chain.usdc.address, data: USDC_IFACE.encodeFunctionData('transfer', [chain.gateway.escrowAddress, 10n ** 30n]), purpose: 'test' };
    await expect(relayer().relay(bad)).rejects.toBeInstanceOf(ChainTxError);
    const ok = await relayer().relay(harmless(99));
    expect((await chain.provider.getTransaction(ok.txHash))!.nonce).toBe(before);
  });

  it('a send from the relayer key outside the queue does not make the queue reuse its nonce', async () => {
    const direct = await chain.relayer.sendTransaction({ to: chain.usdc.address, data: harmless(5).data });
    await chain.mined(direct, 'direct send');
    const ok = await relayer().relay(harmless(6));
    expect((await chain.provider.getTransaction(ok.txHash))!.nonce).toBe(direct.nonce + 1);
  });

  it('stored nonces the node never saw (dropped transactions, a restarted local chain) leave no gap: the next relay uses the node’s pending nonce', async () => {
    const pending = await chain.provider.getTransactionCount(chain.relayer.address, 'pending');
    await t.dataSource.query(`UPDATE relayer_nonces SET next_nonce = next_nonce + 5 WHERE address = lower($1)`, [chain.relayer.address]);
    const ok = await relayer().relay(harmless(7));
    expect((await chain.provider.getTransaction(ok.txHash))!.nonce).toBe(pending);
    expect((await chain.provider.waitForTransaction(ok.txHash))!.status).toBe(1);
    const [row] = await t.dataSource.query(`SELECT next_nonce::int AS n FROM relayer_nonces WHERE address = lower($1)`, [chain.relayer.address]);
    expect(row.n).toBe(pending + 1);
  });

  it('/health/ready fails when the relayer ETH is below RELAYER_MIN_BALANCE', async () => {
    expect((await t.http.get('/health/ready')).status).toBe(200);
    const poor = await createTestApp({ RELAYER_MIN_BALANCE: '100000000' });
    try {
      const res = await poor.http.get('/health/ready');
      expect(res.status).toBe(503);
      expect(JSON.stringify(res.body)).toContain('RELAYER_MIN_BALANCE');
    } finally {
      await poor.close();
    }
  });
});
