import { Logger } from '@nestjs/common';
import { escrowKeyFromId } from '@lib/chain';
import { EscrowIndexer } from '../../src/modules/escrow/escrow-indexer.service';
import { EscrowService } from '../../src/modules/escrow/escrow.service';
import { metricsRegistry } from '../../src/common/metrics';
import type { INestApplicationContext } from '@nestjs/common';
import { startRelayerWorker } from '../support/agents';
import { createTestApp, TestApp } from '../support/app';
import {
  chainEventRows,
  checkoutEvents,
  createCheckout,
  createParties,
  fundingTerms,
  fundOnChain,
  getCheckout,
  indexUntilStatus,
  Party,
  pollToHead,
  TestChain,
  USDC,
} from '../support/chain';
import { expectError } from '../support/errors';
import { sleep } from '../support/wait';

jest.setTimeout(120_000);

/**
 * The chain indexer under disorder (issue 7, items 2, 7 and 11; docs/architecture.md §7): events the
 * API applied ahead of the indexer, an event that cannot fold, fundings recorded by the API path
 * and the indexer at once, and fundings whose terms differ from the checkout's.
 */
describe('escrow indexer: disorder, poison, races and tampered terms', () => {
  let t: TestApp;
  let chain: TestChain;
  let indexer: EscrowIndexer;
  let relayerWorker: INestApplicationContext; // demo:pay's funding goes through the relayer queue

  beforeAll(async () => {
    t = await createTestApp();
    relayerWorker = await startRelayerWorker();
    chain = new TestChain();
    indexer = t.app.get(EscrowIndexer);
  });
  afterAll(async () => {
    chain?.close();
    await relayerWorker?.close();
    await t?.close();
  });
  afterEach(() => jest.restoreAllMocks());

  const getEscrow = (party: Party, id: string) => t.http.get(`/api/v1/escrows/${id}`).set('X-Api-Key', party.org.key);
  const cursor = async () => Number((await t.dataSource.query(`SELECT block_number FROM chain_cursors WHERE name = 'escrow'`))[0]?.block_number ?? -1);
  const setAsideCount = async () => {
    const metric = (await metricsRegistry.getMetricsAsJSON()).find((m) => m.name === 'chain_indexer_events_total');
    return (metric?.values as Array<{ labels: Record<string, string>; value: number }> | undefined)?.find((v) => v.labels.outcome === 'set_aside')?.value ?? 0;
  };

  it('an older event met after the API applied a newer one is inserted and the escrow refolded; the cursor moves on and later fundings are indexed', async () => {
    const { seller, buyer } = await createParties(t, chain);
    const checkout = await createCheckout(t, seller.org, { amount: '12.00' });
    await fundOnChain(t, chain, checkout.id, buyer.wallet);
    const escrowId = (await indexUntilStatus(t, seller.org, checkout.id, 'funded')).escrowId as string;
    await pollToHead(t, chain);
    const key = escrowKeyFromId(checkout.id);

    // The indexer is paused (no passes); the seller accepts (never reported) and then declines.
    const acceptTx = await chain.act(seller.wallet, 'accept', key);
    const declineTx = await chain.act(seller.wallet, 'decline', key);
    const declined = await t.http
      .post(`/api/v1/escrows/${escrowId}/decline`)
      .set('X-Api-Key', seller.org.key)
      .set('Idempotency-Key', `decline-${escrowId}`)
      .send({ txHash: declineTx });
    expect(declined.status).toBe(200);
    expect(declined.body.status).toBe('refunded');

    // The indexer resumes and meets Accepted, older than the applied Declined.
    const pass = await pollToHead(t, chain);
    expect(pass.toBlock).toBe(await chain.headBlock());
    expect(await cursor()).toBe(pass.toBlock);
    const view = (await getEscrow(seller, escrowId)).body;
    expect(view.status).toBe('refunded');
    expect(view.transactions.map((x: { action: string; txHash: string }) => [x.action, x.txHash])).toEqual([
      ['funded', expect.any(String)],
      ['accepted', acceptTx.toLowerCase()],
      ['declined', declineTx.toLowerCase()],
    ]);
    expect((await getCheckout(t, seller.org, checkout.id)).status).toBe('refunded');
    // A late historical event changes no status, so it sends nothing.
    expect((await checkoutEvents(t, checkout.id)).map((e) => e.type)).toEqual(['checkout.funded', 'checkout.refunded']);

    // The indexer still marks new fundings funded.
    const next = await createCheckout(t, seller.org, { amount: '3.00' });
    await fundOnChain(t, chain, next.id, buyer.wallet);
    expect((await indexUntilStatus(t, seller.org, next.id, 'funded')).status).toBe('funded');
  });

  it('a poisoned event (cannot fold even in order) is set aside with an error log and a metric; later events of other escrows are applied and the cursor moves', async () => {
    const { seller, buyer } = await createParties(t, chain);
    const poisoned = await createCheckout(t, seller.org, { amount: '4.00' });
    await fundOnChain(t, chain, poisoned.id, buyer.wallet);
    const poisonedEscrowId = (await indexUntilStatus(t, seller.org, poisoned.id, 'funded')).escrowId as string;
    await pollToHead(t, chain);
    // The stored history diverges from the chain (as after a manual repair or a bug): the mirror
    // believes the escrow was cancelled, so the chain's Accepted cannot follow in any order.
    await t.dataSource.query(`UPDATE escrow_chain_events SET action = 'cancelled' WHERE escrow_id = $1`, [poisonedEscrowId]);
    await t.dataSource.query(`UPDATE escrows SET status = 'cancelled' WHERE id = $1`, [poisonedEscrowId]);

    const acceptTx = await chain.act(seller.wallet, 'accept', escrowKeyFromId(poisoned.id));
    const healthy = await createCheckout(t, seller.org, { amount: '5.00' });
    await fundOnChain(t, chain, healthy.id, buyer.wallet);

    const errors = jest.spyOn(Logger.prototype, 'error');
    const counted = await setAsideCount();
    const pass = await pollToHead(t, chain);
    expect(await cursor()).toBe(pass.toBlock);
    expect((await getCheckout(t, seller.org, healthy.id)).status).toBe('funded');
    expect(await setAsideCount()).toBe(counted + 1);
    expect(errors).toHaveBeenCalledWith(expect.objectContaining({ txHash: acceptTx.toLowerCase(), action: 'accepted' }), expect.stringContaining('set aside'));
    const [row] = await t.dataSource.query('SELECT action, reason FROM chain_events_set_aside WHERE tx_hash = $1', [acceptTx.toLowerCase()]);
    expect(row).toEqual({ action: 'accepted', reason: expect.stringContaining('cannot follow') });
    expect((await chainEventRows(t, poisonedEscrowId)).map((r) => r.action)).toEqual(['cancelled']);

    // Set aside once: later passes neither retry it nor count it again.
    await chain.mine(1);
    await pollToHead(t, chain);
    expect(await setAsideCount()).toBe(counted + 1);
  });

  it('recording a funding races the indexer polling every 50 ms: 50 fundings through the demo:pay path, no error, one escrow each', async () => {
    const { seller, buyer } = await createParties(t, chain, 100n * USDC);
    const escrows = t.app.get(EscrowService);
    let stop = false;
    const pollErrors: string[] = [];
    const poller = (async () => {
      while (!stop) {
        try {
          await indexer.pollOnce();
        } catch (err) {
          pollErrors.push((err as Error).message);
        }
        await sleep(50);
      }
    })();
    const payErrors: string[] = [];
    const checkoutIds: string[] = [];
    try {
      for (let i = 0; i < 50; i++) {
        const checkout = await createCheckout(t, seller.org, { amount: '1.00' });
        checkoutIds.push(checkout.id);
        try {
          const paid = await escrows.payAsBuyer(checkout.id, buyer.wallet);
          expect(paid.status).toBe('funded');
        } catch (err) {
          payErrors.push((err as Error).message);
        }
      }
    } finally {
      stop = true;
      await poller;
    }
    await pollToHead(t, chain);
    expect({ payErrors, pollErrors }).toEqual({ payErrors: [], pollErrors: [] });
    const rows: Array<{ checkout_session_id: string; n: number }> = await t.dataSource.query(
      'SELECT checkout_session_id, count(*)::int AS n FROM escrows WHERE checkout_session_id = ANY($1::uuid[]) GROUP BY 1',
      [checkoutIds],
    );
    expect(rows).toHaveLength(50);
    expect(rows.every((r) => r.n === 1)).toBe(true);
    for (const id of checkoutIds) expect((await checkoutEvents(t, id)).map((e) => e.type)).toEqual(['checkout.funded']);
  });

  it('a funding whose terms differ from the checkout (validly signed other terms) is flagged: no checkout.funded, the checkout is not funded', async () => {
    const { seller, buyer } = await createParties(t, chain);
    const attacker = await chain.wallet();
    const checkout = await createCheckout(t, seller.org, { amount: '40.00' });
    const { terms } = await fundingTerms(t, checkout.id, buyer.wallet.address);
    // An attacker holding a valid signature for other terms: same escrow key, their seller address,
    // a smaller amount and a one-second inspection window.
    const tampered = { ...terms, seller: attacker.address, amount: 1n * USDC, inspectionWindow: 1 };
    const signature = await chain.gateway.signFundingTerms(chain.termsSigner, tampered, Number(process.env.CHAIN_ID));
    await chain.fundWithAuthorization(buyer.wallet, tampered, signature);
    await pollToHead(t, chain);

    expect(await getCheckout(t, seller.org, checkout.id)).toMatchObject({ status: 'open', escrowId: null });
    expect(await checkoutEvents(t, checkout.id)).toEqual([]);
    const [escrow] = await t.dataSource.query('SELECT id, flag FROM escrows WHERE escrow_key = $1', [terms.escrowKey.toLowerCase()]);
    expect(escrow.flag).toBe('terms_mismatch');
    const view = await getEscrow(seller, escrow.id);
    expect(view.status).toBe(200);
    expect(view.body.flag).toEqual({
      reason: 'terms_mismatch',
      mismatches: expect.arrayContaining([
        { field: 'amount', expected: '40000000', actual: '1000000' },
        { field: 'seller', expected: seller.wallet.address, actual: attacker.address },
        { field: 'inspectionWindow', expected: String(168 * 3600), actual: '1' },
      ]),
    });

    // Later events of a flagged escrow are recorded but still reach neither the checkout nor webhooks.
    await chain.act(attacker, 'accept', terms.escrowKey);
    await pollToHead(t, chain);
    expect((await getEscrow(seller, escrow.id)).body.status).toBe('accepted');
    expect(await getCheckout(t, seller.org, checkout.id)).toMatchObject({ status: 'open', escrowId: null });
    expect(await checkoutEvents(t, checkout.id)).toEqual([]);
  });

  it('the API and the indexer share one confirmation rule: a block counts once it is CONFIRMATIONS blocks below head', async () => {
    const app = await createTestApp({ CONFIRMATIONS: '2' });
    try {
      const { seller, buyer } = await createParties(t, chain);
      const checkout = await createCheckout(t, seller.org, { amount: '2.00' });
      await fundOnChain(t, chain, checkout.id, buyer.wallet);
      const escrowId = (await indexUntilStatus(t, seller.org, checkout.id, 'funded')).escrowId as string;
      const acceptTx = await chain.act(seller.wallet, 'accept', escrowKeyFromId(checkout.id));
      const acceptBlock = (await chain.provider.getTransactionReceipt(acceptTx))!.blockNumber;
      const slow = app.app.get(EscrowIndexer);
      const accept = () => app.http.post(`/api/v1/escrows/${escrowId}/accept`).set('X-Api-Key', seller.org.key).send({ txHash: acceptTx });

      await chain.mine(1); // acceptBlock = head − 1: one block on top, two needed
      expect(await chain.headBlock()).toBe(acceptBlock + 1);
      let pass = await slow.pollOnce();
      while (pass.toBlock < (await chain.headBlock()) - 2) pass = await slow.pollOnce();
      expect(pass.toBlock).toBe(acceptBlock - 1);
      expectError(await accept(), 409, 'invalid_request');

      await chain.mine(1); // acceptBlock = head − 2
      expect((await slow.pollOnce()).toBlock).toBe(acceptBlock);
      const res = await accept();
      expect(res.status).toBe(200);
      expect(res.body.status).toBe('accepted');
    } finally {
      await app.close();
    }
  });
});
