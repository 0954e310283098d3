import { escrowKeyFromId } from '@lib/chain';
import { CheckoutEscrowArtifact } from '@lib/contracts';
import { Interface } from 'ethers';
import { EscrowIndexer } from '../../src/modules/escrow/escrow-indexer.service';
import { metricsRegistry } from '../../src/common/metrics';
import type { INestApplicationContext } from '@nestjs/common';
import { startRelayerWorker } from '../support/agents';
import { createTestApp, TestApp } from '../support/app';
import { checkoutEvents, createCheckout, createParties, fundOnChain, getCheckout, pollToHead, TestChain } from '../support/chain';

jest.setTimeout(120_000);

const ESCROW_IFACE = new Interface(CheckoutEscrowArtifact.abi);
const RELEASE = ESCROW_IFACE.getFunction('release')!.selector;

/**
 * Chain jobs across worker replicas (issue 7 item 10; docs/decisions.md "Chain jobs run one at a
 * time"): two Nest application contexts on the same Postgres and chain — two workers' worth of
 * EscrowIndexer, each with its own relayer gateway — run the same pass at the same moment. The
 * cluster-wide lock lets one run and the other skip, so each due escrow gets one release
 * transaction and each log is applied once.
 */
describe('chain jobs: one pass at a time across replicas', () => {
  let a: TestApp;
  let b: TestApp;
  let chain: TestChain;
  let relayerWorker: INestApplicationContext; // auto-release sends through the relayer queue

  beforeAll(async () => {
    a = await createTestApp();
    b = await createTestApp();
    chain = new TestChain();
    relayerWorker = await startRelayerWorker();
  });
  afterAll(async () => {
    chain?.close();
    await relayerWorker?.close();
    await b?.close();
    await a?.close();
  });

  const jobRuns = async (job: string, outcome: string) => {
    const metric = (await metricsRegistry.getMetricsAsJSON()).find((m) => m.name === 'chain_job_runs_total');
    return (metric?.values as Array<{ labels: Record<string, string>; value: number }> | undefined)?.find((v) => v.labels.job === job && v.labels.outcome === outcome)?.value ?? 0;
  };

  /** Release transactions the relayer sent (mined, reverted or not) per escrow key, from block `from`. */
  async function relayerReleases(from: number, keys: string[]): Promise<Record<string, number>> {
    const counts = Object.fromEntries(keys.map((k) => [k.toLowerCase(), 0]));
    const head = await chain.headBlock();
    for (let n = from; n <= head; n++) {
      const block = await chain.provider.getBlock(n, true);
      for (const tx of block!.prefetchedTransactions) {
        if (tx.from !== chain.relayer.address || tx.to?.toLowerCase() !== chain.gateway.escrowAddress.toLowerCase() || !tx.data.startsWith(RELEASE)) continue;
        const [key] = ESCROW_IFACE.decodeFunctionData('release', tx.data) as unknown as [string];
        if (key.toLowerCase() in counts) counts[key.toLowerCase()]++;
      }
    }
    return counts;
  }

  it('two replicas run auto-release at once: each due escrow is released by one transaction, one Released event, one checkout.released', async () => {
    const { seller, buyer } = await createParties(a, chain);
    const checkouts: string[] = [];
    for (let i = 0; i < 6; i++) {
      const c = await createCheckout(a, seller.org, { amount: '2.00', escrowTemplateId: 'custom', metadata: { inspectionWindowHours: 1 } });
      await fundOnChain(a, chain, c.id, buyer.wallet);
      checkouts.push(c.id);
    }
    const keys = checkouts.map((id) => escrowKeyFromId(id));
    for (const key of keys) await chain.act(seller.wallet, 'accept', key);
    for (const key of keys) await chain.act(seller.wallet, 'markDelivered', key);
    await pollToHead(a, chain);
    for (const id of checkouts) expect((await getCheckout(a, seller.org, id)).status).toBe('delivered');
    await chain.increaseTime(3601);
    const from = await chain.headBlock();
    const skipped = await jobRuns('auto-release', 'skipped');

    const [ra, rb] = await Promise.all([a.app.get(EscrowIndexer).autoReleaseDue(), b.app.get(EscrowIndexer).autoReleaseDue()]);
    await pollToHead(a, chain);

    const releasedIds = [...ra, ...rb];
    expect(releasedIds).toHaveLength(6);
    expect(new Set(releasedIds).size).toBe(releasedIds.length); // no escrow released by both
    expect(await jobRuns('auto-release', 'skipped')).toBe(skipped + 1); // one replica ran, the other skipped
    expect(await relayerReleases(from, keys)).toEqual(Object.fromEntries(keys.map((k) => [k.toLowerCase(), 1])));
    const released = (await chain.gateway.getEscrowEvents(from, 'latest')).filter((e) => e.action === 'released' && keys.includes(e.escrowKey.toLowerCase()));
    expect(released.map((e) => e.escrowKey.toLowerCase()).sort()).toEqual([...keys].sort());
    for (const id of checkouts) {
      expect((await getCheckout(a, seller.org, id)).status).toBe('released');
      expect((await checkoutEvents(a, id)).filter((e) => e.type === 'checkout.released')).toHaveLength(1);
    }
  });

  it('two replicas run the index pass at once: one reads, the other skips; each log is applied once', async () => {
    const { seller, buyer } = await createParties(a, chain);
    await pollToHead(a, chain);
    const checkouts: string[] = [];
    for (let i = 0; i < 5; i++) {
      const c = await createCheckout(a, seller.org, { amount: '1.50' });
      await fundOnChain(a, chain, c.id, buyer.wallet);
      checkouts.push(c.id);
    }
    const [pa, pb] = await Promise.all([a.app.get(EscrowIndexer).pollOnce(), b.app.get(EscrowIndexer).pollOnce()]);
    expect([pa.skipped, pb.skipped].filter(Boolean)).toHaveLength(1);
    expect(pa.applied + pb.applied).toBe(5);
    for (const id of checkouts) {
      expect((await getCheckout(a, seller.org, id)).status).toBe('funded');
      expect((await checkoutEvents(a, id)).map((e) => e.type)).toEqual(['checkout.funded']);
    }
    const rows: Array<{ n: number }> = await a.dataSource.query(
      `SELECT count(*)::int AS n FROM escrow_chain_events ev JOIN escrows e ON e.id = ev.escrow_id WHERE e.checkout_session_id = ANY($1::uuid[])`,
      [checkouts],
    );
    expect(rows[0].n).toBe(5);
  });
});
