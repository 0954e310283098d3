import { getAddress } from 'ethers';
import { EscrowIndexer } from '../../src/modules/escrow/escrow-indexer.service';
import { EscrowProjector } from '../../src/modules/escrow/escrow-projector.service';
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
import { expectError, expectInvalidParam } from '../support/errors';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const TX_HASH = /^0x[0-9a-f]{64}$/;
const DAY = 86_400;

// testTimeout in a jest project entry is not applied (it is a global option).
jest.setTimeout(60_000);

/**
 * The escrow lifecycle through the API and the run's real anvil (issue 4; docs/architecture.md §7): funding seen
 * by the indexer alone, party actions reported by txHash, balances, webhook events in order, the
 * escrow resource and its list, idempotency of actions and of the indexer, auto-release and expiry.
 */
describe('escrow lifecycle (API + chain + indexer)', () => {
  let t: TestApp;
  let chain: TestChain;
  let indexer: EscrowIndexer;
  let relayerWorker: INestApplicationContext; // auto-release sends through the relayer queue

  beforeAll(async () => {
    t = await createTestApp();
    chain = new TestChain();
    indexer = t.app.get(EscrowIndexer);
    relayerWorker = await startRelayerWorker();
  });
  afterAll(async () => {
    chain?.close();
    await relayerWorker?.close();
    await t?.close();
  });

  const post = (party: Party, path: string, body: object, idempotencyKey?: string) => {
    const req = t.http.post(`/api/v1/escrows/${path}`).set('X-Api-Key', party.org.key);
    if (idempotencyKey) req.set('Idempotency-Key', idempotencyKey);
    return req.send(body);
  };
  const getEscrow = (party: Party, id: string) => t.http.get(`/api/v1/escrows/${id}`).set('X-Api-Key', party.org.key);
  const listEscrows = (party: Party, query: Record<string, string | number> = {}) =>
    t.http.get('/api/v1/escrows').query(query).set('X-Api-Key', party.org.key);
  const blockTime = async (txHash: string) => {
    const receipt = await chain.provider.getTransactionReceipt(txHash);
    return (await chain.provider.getBlock(receipt!.blockNumber))!.timestamp;
  };

  /** A fresh checkout funded on-chain and picked up by the indexer. */
  async function fundedCheckout(seller: Party, buyer: Party, body: Record<string, unknown> = {}) {
    const checkout = await createCheckout(t, seller.org, body);
    const fundTx = await fundOnChain(t, chain, checkout.id, buyer.wallet);
    const funded = await indexUntilStatus(t, seller.org, checkout.id, 'funded');
    return { checkout, fundTx, escrowId: funded.escrowId as string };
  }

  it('happy path: checkout → gasless funding seen by the indexer → accept → mark-delivered → release; balances and events match', async () => {
    const { seller, buyer } = await createParties(t, chain);
    const checkout = await createCheckout(t, seller.org, { amount: '25.50', escrowTemplateId: 'digital', description: 'Logo design' });
    expect(checkout).toMatchObject({ status: 'open', escrowId: null, escrowTemplateId: 'digital' });
    const amount = 25_500_000n;

    const unbound = await t.http.get(`/api/v1/checkout-sessions/${checkout.id}/funding-terms`);
    expect(unbound.status).toBe(200);
    expect(unbound.body).toMatchObject({ terms: { buyer: null }, termsSignature: null });
    const termsRes = await t.http.get(`/api/v1/checkout-sessions/${checkout.id}/funding-terms`).query({ buyer: buyer.wallet.address.toLowerCase() });
    expect(termsRes.status).toBe(200);
    expect(termsRes.body).toEqual({
      checkoutSessionId: checkout.id,
      amount: '25.50',
      chainId: 31337,
      escrowContract: getAddress(process.env.ESCROW_ADDRESS!),
      token: getAddress(process.env.USDC_ADDRESS!),
      terms: {
        escrowId: expect.stringMatching(new RegExp(`^0x0{32}${checkout.id.replace(/-/g, '')}$`)),
        buyer: buyer.wallet.address,
        seller: seller.wallet.address,
        amount: '25500000',
        inspectionWindow: 3 * DAY,
        deadline: Math.floor(Date.parse(checkout.expiresAt as string) / 1000),
      },
      termsSignature: expect.stringMatching(/^0x[0-9a-f]{130}$/),
      expiresAt: checkout.expiresAt,
    });
    const { funding, terms } = await fundingTerms(t, checkout.id, buyer.wallet.address);

    const escrowAddress = chain.gateway.escrowAddress;
    const [buyer0, seller0, escrow0] = await chain.balances(buyer.wallet.address, seller.wallet.address, escrowAddress);
    const buyerEth0 = await chain.provider.getBalance(buyer.wallet.address);

    const fundTx = await chain.fundWithAuthorization(buyer.wallet, terms, funding.termsSignature);
    expect(await chain.balances(buyer.wallet.address, escrowAddress)).toEqual([buyer0 - amount, escrow0 + amount]);
    expect(await chain.provider.getBalance(buyer.wallet.address)).toBe(buyerEth0); // gasless: the relayer paid
    expect(await chain.gateway.getOnChainEscrow(terms.escrowKey)).toMatchObject({ state: 'funded', buyer: buyer.wallet.address, seller: seller.wallet.address, amount });

    // Funded by the indexer alone: no escrow API call until the checkout shows funded.
    const funded = await indexUntilStatus(t, seller.org, checkout.id, 'funded');
    const escrowId = funded.escrowId as string;
    expect(escrowId).toMatch(UUID);
    const afterFunding = await getEscrow(seller, escrowId);
    expect(afterFunding.status).toBe(200);
    expect(afterFunding.body).toMatchObject({ status: 'funded', role: 'seller', checkoutSessionId: checkout.id });
    expect(afterFunding.body.transactions).toEqual([
      { action: 'funded', txHash: fundTx.toLowerCase(), blockNumber: expect.any(Number), from: null, recordedAt: expect.any(String) },
    ]);

    const acceptTx = await chain.act(seller.wallet, 'accept', terms.escrowKey);
    const accepted = await post(seller, `${escrowId}/accept`, { txHash: acceptTx });
    expect(accepted.status).toBe(200);
    expect(accepted.body).toMatchObject({ id: escrowId, status: 'accepted', deliveredAt: null, autoReleaseAt: null });
    expect((await getEscrow(seller, escrowId)).body).toEqual(accepted.body); // the action's response is what a read shows
    expect((await getCheckout(t, seller.org, checkout.id)).status).toBe('accepted');

    const deliverTx = await chain.act(seller.wallet, 'markDelivered', terms.escrowKey);
    const delivered = await post(seller, `${escrowId}/mark-delivered`, { txHash: deliverTx });
    expect(delivered.status).toBe(200);
    const deliveredAt = await blockTime(deliverTx);
    expect(delivered.body).toMatchObject({
      status: 'delivered',
      deliveredAt: new Date(deliveredAt * 1000).toISOString(),
      autoReleaseAt: new Date((deliveredAt + 3 * DAY) * 1000).toISOString(),
    });
    expect((await getCheckout(t, seller.org, checkout.id)).status).toBe('delivered');
    // The buyer sees the same escrow from its side.
    const buyerView = await getEscrow(buyer, escrowId);
    expect(buyerView.status).toBe(200);
    expect(buyerView.body).toMatchObject({ role: 'buyer', buyer: { address: buyer.wallet.address, you: true }, seller: { address: seller.wallet.address, you: false } });

    const releaseTx = await chain.act(buyer.wallet, 'release', terms.escrowKey);
    const released = await post(buyer, `${escrowId}/release`, { txHash: releaseTx, confirm: true }, `release-${escrowId}`);
    expect(released.status).toBe(200);
    expect(released.headers['idempotent-replayed']).toBe('false');
    expect(released.body).toMatchObject({ id: escrowId, status: 'released', role: 'buyer', autoReleaseAt: null });

    const sessionAfter = await getCheckout(t, seller.org, checkout.id);
    expect(sessionAfter).toMatchObject({ status: 'released', escrowId });
    expect(await chain.balances(buyer.wallet.address, seller.wallet.address, escrowAddress)).toEqual([buyer0 - amount, seller0 + amount, escrow0]);
    expect((await chain.gateway.getOnChainEscrow(terms.escrowKey)).state).toBe('released');

    // The escrow resource renders everything docs/architecture.md §7 lists.
    const view = await getEscrow(seller, escrowId);
    expect(view.status).toBe(200);
    expect(view.body).toEqual({
      id: escrowId,
      status: 'released',
      role: 'seller',
      checkoutSessionId: checkout.id,
      buyer: { address: buyer.wallet.address, you: false },
      seller: { address: seller.wallet.address, you: true },
      amount: '25.50',
      currency: 'USDC',
      escrowTemplateId: 'digital',
      inspectionWindowSeconds: 3 * DAY,
      deliveredAt: new Date(deliveredAt * 1000).toISOString(),
      autoReleaseAt: null,
      flag: null,
      chain: { chainId: 31337, contract: expect.any(String), escrowKey: terms.escrowKey },
      transactions: [
        { action: 'funded', txHash: fundTx.toLowerCase(), blockNumber: expect.any(Number), from: null, recordedAt: expect.any(String) },
        { action: 'accepted', txHash: acceptTx.toLowerCase(), blockNumber: expect.any(Number), from: seller.wallet.address, recordedAt: expect.any(String) },
        { action: 'delivered', txHash: deliverTx.toLowerCase(), blockNumber: expect.any(Number), from: seller.wallet.address, recordedAt: expect.any(String) },
        { action: 'released', txHash: releaseTx.toLowerCase(), blockNumber: expect.any(Number), from: buyer.wallet.address, recordedAt: expect.any(String) },
      ],
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    expect(getAddress(view.body.chain.contract)).toBe(escrowAddress);
    for (const tx of view.body.transactions) expect(tx.txHash).toMatch(TX_HASH);

    // Webhook events, in order; released and paid are two events with the same data.
    const events = await checkoutEvents(t, checkout.id);
    expect(events.map((e) => [e.type, e.status])).toEqual([
      ['checkout.funded', 'funded'],
      ['checkout.accepted', 'accepted'],
      ['checkout.released', 'released'],
      ['checkout.paid', 'released'],
    ]);
    const [, , releasedEvent, paidEvent] = events;
    expect(paidEvent.id).not.toBe(releasedEvent.id);
    expect(paidEvent.object).toEqual(releasedEvent.object);
    expect(releasedEvent.object).toMatchObject({ id: checkout.id, escrowId, status: 'released', amount: '25.50' });
    const orgs: Array<{ organization_id: string }> = await t.dataSource.query(
      `SELECT DISTINCT organization_id FROM outbox_events WHERE data->'object'->>'id' = $1`,
      [checkout.id],
    );
    expect(orgs).toEqual([{ organization_id: seller.org.organizationId }]);

    // Lists with role and status filters, from both sides.
    const ids = (res: { body: { data: Array<{ id: string }> } }) => res.body.data.map((e) => e.id);
    expect(ids(await listEscrows(seller))).toEqual([escrowId]);
    expect(ids(await listEscrows(seller, { role: 'seller', status: 'released' }))).toEqual([escrowId]);
    expect(ids(await listEscrows(seller, { role: 'buyer' }))).toEqual([]);
    expect(ids(await listEscrows(seller, { status: 'funded' }))).toEqual([]);
    const buyerList = await listEscrows(buyer, { role: 'buyer', status: 'released' });
    expect(buyerList.status).toBe(200);
    expect(buyerList.body).toEqual({ data: [expect.objectContaining({ id: escrowId, role: 'buyer' })], hasMore: false, nextCursor: null });
  });

  it('lists escrows newest first with pagination; bad filters and cursors are 400', async () => {
    const { seller, buyer } = await createParties(t, chain);
    const escrowIds: string[] = [];
    for (let i = 0; i < 3; i++) escrowIds.push((await fundedCheckout(seller, buyer, { amount: `${i + 1}.00` })).escrowId);
    const newestFirst = [...escrowIds].reverse();

    const page1 = await listEscrows(seller, { limit: 2 });
    expect(page1.status).toBe(200);
    expect(page1.body.data.map((e: { id: string }) => e.id)).toEqual(newestFirst.slice(0, 2));
    expect(page1.body).toMatchObject({ hasMore: true, nextCursor: newestFirst[1] });
    const page2 = await listEscrows(seller, { limit: 2, starting_after: page1.body.nextCursor });
    expect(page2.body).toMatchObject({ hasMore: false, nextCursor: null });
    expect(page2.body.data.map((e: { id: string }) => e.id)).toEqual([newestFirst[2]]);
    expect((await listEscrows(buyer, { role: 'buyer', status: 'funded', limit: 100 })).body.data.map((e: { id: string }) => e.id)).toEqual(newestFirst);
    expect(page1.body.data[0]).toMatchObject({ status: 'funded', amount: '3.00', role: 'seller' });

    expectInvalidParam(await listEscrows(seller, { limit: 0 }), 'limit');
    expectInvalidParam(await listEscrows(seller, { limit: 101 }), 'limit');
    expectInvalidParam(await listEscrows(seller, { role: 'arbiter' }), 'role');
    expectInvalidParam(await listEscrows(seller, { status: 'open' }), 'status');
    const stranger = await createParties(t, chain, 0n);
    expectInvalidParam(await listEscrows(stranger.seller, { starting_after: escrowIds[0] }), 'starting_after');
    expect((await listEscrows(stranger.seller)).body).toEqual({ data: [], hasMore: false, nextCursor: null });
  });

  describe('idempotency', () => {
    it('the same release replayed with the same key returns the same result; the same txHash under a new key changes nothing', async () => {
      const { seller, buyer } = await createParties(t, chain);
      const { checkout, escrowId } = await fundedCheckout(seller, buyer);
      const key = (await getEscrow(seller, escrowId)).body.chain.escrowKey as string;
      const releaseTx = await chain.act(buyer.wallet, 'release', key);
      const body = { txHash: releaseTx, confirm: true };

      const first = await post(buyer, `${escrowId}/release`, body, 'rel-1');
      expect(first.status).toBe(200);
      expect(first.headers['idempotent-replayed']).toBe('false');
      expect(first.body.status).toBe('released');

      const replay = await post(buyer, `${escrowId}/release`, body, 'rel-1');
      expect(replay.status).toBe(200);
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.body).toEqual(first.body);

      const sameTxNewKey = await post(buyer, `${escrowId}/release`, body, 'rel-2');
      expect(sameTxNewKey.status).toBe(200);
      expect(sameTxNewKey.headers['idempotent-replayed']).toBe('false');
      expect(sameTxNewKey.body).toEqual(first.body);

      // Same key, other request → 422; the tx of one action reported as another → 400 tx_already_used.
      expectError(await post(buyer, `${escrowId}/release`, { txHash: '0x' + '12'.repeat(32), confirm: true }, 'rel-1'), 422, 'idempotency_conflict');
      const reused = await post(buyer, `${escrowId}/dispute`, body, 'dis-1');
      expect(expectError(reused, 400, 'invalid_request')).toMatchObject({ reason: 'tx_already_used' });

      expect((await chainEventRows(t, escrowId)).map((r) => r.action)).toEqual(['funded', 'released']);
      expect((await checkoutEvents(t, checkout.id)).map((e) => e.type)).toEqual(['checkout.funded', 'checkout.released', 'checkout.paid']);
      expect((await getCheckout(t, seller.org, checkout.id)).status).toBe('released');
    });

    it('the indexer seeing logs the API already applied (or the same log twice) changes nothing', async () => {
      const { seller, buyer } = await createParties(t, chain);
      const { checkout, escrowId, fundTx } = await fundedCheckout(seller, buyer);
      const key = (await getEscrow(seller, escrowId)).body.chain.escrowKey as string;
      const acceptTx = await chain.act(seller.wallet, 'accept', key);
      expect((await post(seller, `${escrowId}/accept`, { txHash: acceptTx })).body.status).toBe('accepted');
      const before = (await getEscrow(seller, escrowId)).body;

      const pass = await pollToHead(t, chain);
      expect(pass.reorgForkBlock).toBeUndefined();
      expect((await chainEventRows(t, escrowId)).map((r) => [r.action, r.tx_hash])).toEqual([
        ['funded', fundTx.toLowerCase()],
        ['accepted', acceptTx.toLowerCase()],
      ]);

      // Feed the same logs to the projector again, as a second indexer (or a re-read range) would.
      const projector = t.app.get(EscrowProjector);
      for (const txHash of [fundTx, acceptTx]) {
        const receipt = await chain.provider.getTransactionReceipt(txHash);
        const logs = await chain.gateway.getEscrowEvents(receipt!.blockNumber, receipt!.blockNumber);
        const mine = logs.filter((e) => e.txHash.toLowerCase() === txHash.toLowerCase());
        expect(mine).toHaveLength(1);
        const result = await projector.apply(mine[0]);
        expect(result.applied).toBe(false);
      }

      expect((await chainEventRows(t, escrowId)).length).toBe(2);
      expect((await checkoutEvents(t, checkout.id)).map((e) => e.type)).toEqual(['checkout.funded', 'checkout.accepted']);
      expect((await getEscrow(seller, escrowId)).body).toEqual(before);
      const escrows: Array<{ n: number }> = await t.dataSource.query('SELECT count(*)::int AS n FROM escrows WHERE checkout_session_id = $1', [checkout.id]);
      expect(escrows[0].n).toBe(1);
    });
  });

  it('auto-release: once the inspection window has passed on-chain, autoReleaseDue releases through the relayer queue', async () => {
    const { seller, buyer } = await createParties(t, chain);
    const { checkout, escrowId } = await fundedCheckout(seller, buyer, { amount: '7.00', escrowTemplateId: 'custom', metadata: { inspectionWindowHours: 1 } });
    const key = (await getEscrow(seller, escrowId)).body.chain.escrowKey as string;
    expect(await post(seller, `${escrowId}/accept`, { txHash: await chain.act(seller.wallet, 'accept', key) })).toHaveProperty('status', 200);
    const delivered = await post(seller, `${escrowId}/mark-delivered`, { txHash: await chain.act(seller.wallet, 'markDelivered', key) });
    expect(delivered.body).toMatchObject({ status: 'delivered', inspectionWindowSeconds: 3600 });
    const seller0 = await chain.usdcBalance(seller.wallet.address);

    expect(await indexer.autoReleaseDue()).not.toContain(escrowId);
    expect((await getEscrow(seller, escrowId)).body.status).toBe('delivered');

    const autoReleaseAt = Date.parse(delivered.body.autoReleaseAt) / 1000;
    await chain.increaseTime(Math.max(1, autoReleaseAt - (await chain.headTimestamp()) + 1));
    expect(await indexer.autoReleaseDue()).toContain(escrowId);

    const view = (await getEscrow(seller, escrowId)).body;
    expect(view).toMatchObject({ status: 'released', autoReleaseAt: null });
    expect(view.transactions.at(-1)).toMatchObject({ action: 'released', from: chain.relayer.address });
    // Sent by the relayer queue (nonce allocated in Postgres), not straight from the key.
    const relayed = await t.dataSource.query(`SELECT status, tx_hash FROM relayer_transactions WHERE purpose = 'auto-release' AND reference = $1`, [escrowId]);
    expect(relayed).toEqual([{ status: 'broadcast', tx_hash: view.transactions.at(-1).txHash }]);
    expect((await getCheckout(t, seller.org, checkout.id)).status).toBe('released');
    expect(await chain.usdcBalance(seller.wallet.address)).toBe(seller0 + 7n * USDC);
    expect((await checkoutEvents(t, checkout.id)).map((e) => e.type)).toEqual(['checkout.funded', 'checkout.accepted', 'checkout.released', 'checkout.paid']);
    expect(await indexer.autoReleaseDue()).not.toContain(escrowId);
  });

  it('expiry job: an open checkout past expiresAt is recorded expired and its funding terms are refused', async () => {
    const { seller } = await createParties(t, chain, 0n);
    const expiring = await createCheckout(t, seller.org);
    const live = await createCheckout(t, seller.org);
    await t.dataSource.query(`UPDATE checkout_sessions SET expires_at = now() - interval '1 minute' WHERE id = $1`, [expiring.id]);

    // Shown expired at once (derived), recorded by the job.
    expect((await getCheckout(t, seller.org, expiring.id)).status).toBe('expired');
    expect(await indexer.expireCheckouts()).toBeGreaterThanOrEqual(1);
    const rows: Array<{ id: string; status: string }> = await t.dataSource.query(
      'SELECT id, status FROM checkout_sessions WHERE id = ANY($1) ORDER BY id',
      [[expiring.id, live.id]],
    );
    expect(Object.fromEntries(rows.map((r) => [r.id, r.status]))).toEqual({ [expiring.id]: 'expired', [live.id]: 'open' });

    const refused = await t.http.get(`/api/v1/checkout-sessions/${expiring.id}/funding-terms`);
    expect(expectError(refused, 409, 'invalid_request')).toMatchObject({ status: 'expired', allowed: ['open'] });
    expect((await t.http.get(`/api/v1/checkout-sessions/${live.id}/funding-terms`)).status).toBe(200);
  });
});
