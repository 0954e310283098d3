import { escrowKeyFromId, escrowKeyParts } from '@lib/chain';
import { randomUUID } from 'node:crypto';
import { createTestApp, TestApp } from '../support/app';
import {
  checkoutEvents,
  cliJson,
  createCheckout,
  createParties,
  fundingTerms,
  fundOnChain,
  getCheckout,
  indexUntilStatus,
  Party,
  pollToHead,
  requireBuiltCli,
  runCli,
  TestChain,
} from '../support/chain';

// Each CLI run boots a Nest application context.
jest.setTimeout(120_000);

/**
 * Refund and dispute paths (docs/architecture.md §7): decline from funded and from accepted, cancel from funded,
 * dispute from accepted and from delivered resolved by the arbiter through the compiled operator CLI
 * (`escrow:resolve`, not public API) both ways; on-chain balances, checkout status and events.
 */
describe('escrow refunds, cancellation and disputes', () => {
  let t: TestApp;
  let chain: TestChain;

  beforeAll(async () => {
    requireBuiltCli();
    t = await createTestApp();
    chain = new TestChain();
  });
  afterAll(async () => {
    chain?.close();
    await t?.close();
  });

  const post = (party: Party, path: string, body: object, idempotencyKey?: string) => {
    const req = t.http.post(`/api/v1/escrows/${path}`).set('X-Api-Key', party.org.key);
    if (idempotencyKey) req.set('Idempotency-Key', idempotencyKey);
    return req.send(body);
  };

  /** Fresh parties and a checkout of `amount` USDC funded on-chain and indexed; balances taken before funding. */
  async function funded(amountText = '40.00') {
    const { seller, buyer } = await createParties(t, chain);
    const checkout = await createCheckout(t, seller.org, { amount: amountText });
    const escrowAddress = chain.gateway.escrowAddress;
    const [buyer0, seller0, escrow0] = await chain.balances(buyer.wallet.address, seller.wallet.address, escrowAddress);
    await fundOnChain(t, chain, checkout.id, buyer.wallet);
    const session = await indexUntilStatus(t, seller.org, checkout.id, 'funded');
    const escrowId = session.escrowId as string;
    const escrowKey = (await t.http.get(`/api/v1/escrows/${escrowId}`).set('X-Api-Key', seller.org.key)).body.chain.escrowKey as string;
    const balances = () => chain.balances(buyer.wallet.address, seller.wallet.address, escrowAddress);
    return { seller, buyer, checkout, escrowId, escrowKey, before: [buyer0, seller0, escrow0], balances };
  }

  const types = async (checkoutId: string) => (await checkoutEvents(t, checkoutId)).map((e) => [e.type, e.status]);

  it('decline from funded: the buyer is refunded, checkout.refunded', async () => {
    const f = await funded();
    const tx = await chain.act(f.seller.wallet, 'decline', f.escrowKey);
    const res = await post(f.seller, `${f.escrowId}/decline`, { txHash: tx }, randomUUID());
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'refunded' });
    expect(await f.balances()).toEqual(f.before);
    expect((await getCheckout(t, f.seller.org, f.checkout.id)).status).toBe('refunded');
    expect(await types(f.checkout.id)).toEqual([
      ['checkout.funded', 'funded'],
      ['checkout.refunded', 'refunded'],
    ]);
  });

  it('decline from accepted: the buyer is refunded, checkout.refunded', async () => {
    const f = await funded();
    await post(f.seller, `${f.escrowId}/accept`, { txHash: await chain.act(f.seller.wallet, 'accept', f.escrowKey) }).expect(200);
    const tx = await chain.act(f.seller.wallet, 'decline', f.escrowKey);
    const res = await post(f.seller, `${f.escrowId}/decline`, { txHash: tx }, randomUUID());
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('refunded');
    expect(await f.balances()).toEqual(f.before);
    expect((await getCheckout(t, f.seller.org, f.checkout.id)).status).toBe('refunded');
    expect(await types(f.checkout.id)).toEqual([
      ['checkout.funded', 'funded'],
      ['checkout.accepted', 'accepted'],
      ['checkout.refunded', 'refunded'],
    ]);
  });

  it('cancel from funded: the buyer gets the money back, checkout.cancelled, and the checkout reopens under a new escrow id', async () => {
    const f = await funded();
    const tx = await chain.act(f.buyer.wallet, 'cancel', f.escrowKey);
    const res = await post(f.buyer, `${f.escrowId}/cancel`, { txHash: tx }, randomUUID());
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'cancelled', role: 'buyer' });
    expect(await f.balances()).toEqual(f.before);
    // The event tells the merchant about the cancelled escrow; the checkout itself is payable again.
    expect(await types(f.checkout.id)).toEqual([
      ['checkout.funded', 'funded'],
      ['checkout.cancelled', 'cancelled'],
    ]);
    expect((await checkoutEvents(t, f.checkout.id))[1].object).toMatchObject({ escrowId: f.escrowId });
    expect(await getCheckout(t, f.seller.org, f.checkout.id)).toMatchObject({ status: 'open', escrowId: null });
    const next = (await fundingTerms(t, f.checkout.id, f.buyer.wallet.address)).terms.escrowKey;
    expect(next).not.toBe(f.escrowKey);
    expect(escrowKeyParts(next)).toEqual({ id: f.checkout.id, attempt: 1 });
    // The cancelled escrow id cannot be funded again; the new one can, by the same or another buyer.
    expect((await chain.gateway.getOnChainEscrow(f.escrowKey)).state).toBe('cancelled');
    await fundOnChain(t, chain, f.checkout.id, f.buyer.wallet);
    const again = await indexUntilStatus(t, f.seller.org, f.checkout.id, 'funded');
    expect(again.escrowId).not.toBe(f.escrowId);
    const second = (await t.http.get(`/api/v1/escrows/${again.escrowId as string}`).set('X-Api-Key', f.seller.org.key)).body;
    expect(second).toMatchObject({ status: 'funded', flag: null, chain: { escrowKey: next } });
    expect(await types(f.checkout.id)).toEqual([
      ['checkout.funded', 'funded'],
      ['checkout.cancelled', 'cancelled'],
      ['checkout.funded', 'funded'],
    ]);
    // The first escrow stays on record, cancelled, for both parties.
    expect((await t.http.get(`/api/v1/escrows/${f.escrowId}`).set('X-Api-Key', f.buyer.org.key)).body.status).toBe('cancelled');
  });

  it('a cancel applied by the API and the indexer at once reopens the checkout once (one attempt step)', async () => {
    const f = await funded();
    const tx = await chain.act(f.buyer.wallet, 'cancel', f.escrowKey);
    const [res] = await Promise.all([post(f.buyer, `${f.escrowId}/cancel`, { txHash: tx }, randomUUID()), pollToHead(t, chain), pollToHead(t, chain)]);
    expect(res.status).toBe(200);
    const [row] = await t.dataSource.query('SELECT status, escrow_id, escrow_attempt FROM checkout_sessions WHERE id = $1', [f.checkout.id]);
    expect(row).toEqual({ status: 'open', escrow_id: null, escrow_attempt: 1 });
    expect((await types(f.checkout.id)).filter(([type]) => type === 'checkout.cancelled')).toHaveLength(1);
  });

  it('a funding for an escrow attempt the checkout does not offer is flagged and leaves the checkout open; the offered attempt still funds', async () => {
    const f = await funded();
    const tx = await chain.act(f.buyer.wallet, 'cancel', f.escrowKey);
    expect((await post(f.buyer, `${f.escrowId}/cancel`, { txHash: tx }, randomUUID())).status).toBe(200);
    const { terms } = await fundingTerms(t, f.checkout.id, f.buyer.wallet.address); // attempt 1, the one offered
    // Validly signed terms for attempt 2, which the checkout never offered (out of order).
    const ahead = { ...terms, escrowKey: escrowKeyFromId(f.checkout.id, 2) };
    await chain.fundWithAuthorization(f.buyer.wallet, ahead, await chain.gateway.signFundingTerms(chain.termsSigner, ahead, Number(process.env.CHAIN_ID)));
    await pollToHead(t, chain);
    const [stray] = await t.dataSource.query('SELECT id, flag, flag_details FROM escrows WHERE escrow_key = $1', [ahead.escrowKey.toLowerCase()]);
    expect(stray.flag).toBe('terms_mismatch');
    expect(stray.flag_details.mismatches).toContainEqual({ field: 'escrowAttempt', expected: '1', actual: '2' });
    expect(await getCheckout(t, f.seller.org, f.checkout.id)).toMatchObject({ status: 'open', escrowId: null });
    expect((await types(f.checkout.id)).map(([type]) => type)).toEqual(['checkout.funded', 'checkout.cancelled']);

    await fundOnChain(t, chain, f.checkout.id, f.buyer.wallet);
    const again = await indexUntilStatus(t, f.seller.org, f.checkout.id, 'funded');
    expect(again.escrowId).not.toBe(stray.id);
  });

  it('a cancel after the checkout expired leaves it cancelled (it is not reopened)', async () => {
    const f = await funded();
    await t.dataSource.query(`UPDATE checkout_sessions SET expires_at = now() - interval '1 second' WHERE id = $1`, [f.checkout.id]);
    const tx = await chain.act(f.buyer.wallet, 'cancel', f.escrowKey);
    expect((await post(f.buyer, `${f.escrowId}/cancel`, { txHash: tx }, randomUUID())).status).toBe(200);
    const [row] = await t.dataSource.query('SELECT status, escrow_id, escrow_attempt FROM checkout_sessions WHERE id = $1', [f.checkout.id]);
    expect(row).toEqual({ status: 'cancelled', escrow_id: f.escrowId, escrow_attempt: 0 });
    expect(await f.balances()).toEqual(f.before);
  });

  it('dispute from accepted (by the buyer), then escrow:resolve --to buyer refunds the buyer', async () => {
    const f = await funded('12.345678');
    await post(f.seller, `${f.escrowId}/accept`, { txHash: await chain.act(f.seller.wallet, 'accept', f.escrowKey) }).expect(200);
    const tx = await chain.act(f.buyer.wallet, 'dispute', f.escrowKey);
    const res = await post(f.buyer, `${f.escrowId}/dispute`, { txHash: tx, confirm: true }, randomUUID());
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'disputed', autoReleaseAt: null });
    expect((await getCheckout(t, f.seller.org, f.checkout.id)).status).toBe('disputed');

    const run = await runCli(['escrow:resolve', f.escrowId, '--to', 'buyer', '--json']);
    const out = cliJson(run);
    expect(run.code).toBe(0);
    expect(out).toEqual({ txHash: expect.stringMatching(/^0x[0-9a-f]{64}$/), escrowId: f.escrowId, status: 'refunded' });

    expect(await f.balances()).toEqual(f.before);
    expect((await chain.gateway.getOnChainEscrow(f.escrowKey)).state).toBe('refunded');
    expect((await getCheckout(t, f.seller.org, f.checkout.id)).status).toBe('refunded');
    const view = (await t.http.get(`/api/v1/escrows/${f.escrowId}`).set('X-Api-Key', f.buyer.org.key)).body;
    expect(view.status).toBe('refunded');
    expect(view.transactions.map((x: { action: string }) => x.action)).toEqual(['funded', 'accepted', 'disputed', 'resolved']);
    expect(view.transactions[3]).toMatchObject({ txHash: (out.txHash as string).toLowerCase(), from: chain.arbiter.address });
    expect(await types(f.checkout.id)).toEqual([
      ['checkout.funded', 'funded'],
      ['checkout.accepted', 'accepted'],
      ['checkout.disputed', 'disputed'],
      ['checkout.refunded', 'refunded'],
    ]);
  });

  it('dispute from delivered (by the seller), then escrow:resolve --to seller pays the seller (released + paid)', async () => {
    const f = await funded('40.00');
    await post(f.seller, `${f.escrowId}/accept`, { txHash: await chain.act(f.seller.wallet, 'accept', f.escrowKey) }).expect(200);
    const delivered = await post(f.seller, `${f.escrowId}/mark-delivered`, { txHash: await chain.act(f.seller.wallet, 'markDelivered', f.escrowKey) });
    expect(delivered.status).toBe(200);
    expect(delivered.body.status).toBe('delivered');
    expect(delivered.body.inspectionWindowSeconds).toBeGreaterThan(0);
    expect(Date.parse(delivered.body.autoReleaseAt) - Date.parse(delivered.body.deliveredAt)).toBe(delivered.body.inspectionWindowSeconds * 1000);
    const tx = await chain.act(f.seller.wallet, 'dispute', f.escrowKey);
    const res = await post(f.seller, `${f.escrowId}/dispute`, { txHash: tx, confirm: true }, randomUUID());
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'disputed', autoReleaseAt: null });

    const run = await runCli(['escrow:resolve', f.escrowId, '--to', 'seller', '--json']);
    const out = cliJson(run);
    expect(run.code).toBe(0);
    expect(out).toMatchObject({ escrowId: f.escrowId, status: 'released' });

    const [buyer0, seller0, escrow0] = f.before;
    expect(await f.balances()).toEqual([buyer0 - 40_000_000n, seller0 + 40_000_000n, escrow0]);
    expect((await getCheckout(t, f.seller.org, f.checkout.id)).status).toBe('released');
    const events = await checkoutEvents(t, f.checkout.id);
    expect(events.map((e) => [e.type, e.status])).toEqual([
      ['checkout.funded', 'funded'],
      ['checkout.accepted', 'accepted'],
      ['checkout.disputed', 'disputed'],
      ['checkout.released', 'released'],
      ['checkout.paid', 'released'],
    ]);
    expect(events[4].object).toEqual(events[3].object);

    // Resolving again, or an unknown escrow, is refused with a JSON error and exit code 2; nothing moves.
    const again = await runCli(['escrow:resolve', f.escrowId, '--to', 'buyer', '--json']);
    expect(again.code).toBe(2);
    expect(cliJson(again)).toMatchObject({ code: 'invalid_request', details: { status: 'released', allowed: ['disputed'] } });
    const unknown = await runCli(['escrow:resolve', randomUUID(), '--to', 'buyer', '--json']);
    expect(unknown.code).toBe(2);
    expect(cliJson(unknown)).toMatchObject({ code: 'not_found' });
    const badSide = await runCli(['escrow:resolve', f.escrowId, '--to', 'arbiter', '--json']);
    expect(badSide.code).toBe(2);
    expect(cliJson(badSide).error).toContain('--to');
    expect(await f.balances()).toEqual([buyer0 - 40_000_000n, seller0 + 40_000_000n, escrow0]);
  });
});
