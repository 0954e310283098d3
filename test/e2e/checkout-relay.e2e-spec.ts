import type { INestApplicationContext } from '@nestjs/common';
import { Wallet } from 'ethers';
import { ChainAccess } from '../../src/chain/chain-access.service';
import { RelayerFaults } from '../../src/chain/relayer/relayer-sender.service';
import { FaultSwitch } from '../support/faults';
import { startRelayerWorker } from '../support/agents';
import { createTestApp, TestApp } from '../support/app';
import { checkoutEvents, createCheckout, createParties, indexUntilStatus, Party, TestChain, USDC } from '../support/chain';
import { expectError } from '../support/errors';
import { createOrg } from '../support/factories';
import { waitFor } from '../support/wait';

jest.setTimeout(120_000);

type TypedData = { domain: Record<string, unknown>; types: Record<string, Array<{ name: string; type: string }>>; primaryType: string; message: Record<string, unknown> };

/** Signs typed data as a wallet does for eth_signTypedData_v4 (the EIP712Domain type is implied by ethers). */
function sign(wallet: Wallet, typedData: TypedData): Promise<string> {
  const types = Object.fromEntries(Object.entries(typedData.types).filter(([k]) => k !== 'EIP712Domain'));
  return wallet.signTypedData(typedData.domain, types, typedData.message);
}

/**
 * The checkout host's JSON API (docs/architecture.md §16, docs/api.md "Checkout host JSON"): a buyer
 * holding USDC and no ETH funds a checkout by signature through the relay, then acts on the escrow by
 * signed EscrowActions; invalid relays are refused and store nothing; replays and twins broadcast once.
 */
describe('checkout host: gasless funding relay and buyer actions', () => {
  let t: TestApp;
  let chain: TestChain;
  let relayerWorker: INestApplicationContext;
  const relayerFaults = new FaultSwitch<'after_signed'>();
  let seller: Party;

  beforeAll(async () => {
    t = await createTestApp();
    chain = new TestChain();
    relayerWorker = await startRelayerWorker([{ provide: RelayerFaults, useValue: relayerFaults }]);
    ({ seller } = await createParties(t, chain, 0n));
  });
  afterAll(async () => {
    chain?.close();
    await relayerWorker?.close();
    await t?.close();
  });

  /** A buyer wallet with `usdc` and no ETH at all. */
  const gaslessBuyer = async (usdc = 100n * USDC) => {
    const w = await chain.wallet({ usdc, eth: false });
    expect(await chain.provider.getBalance(w.address)).toBe(0n);
    return w;
  };
  const relayRows = async (checkoutId: string) => Number((await t.dataSource.query(`SELECT count(*)::int AS n FROM checkout_relays WHERE checkout_session_id = $1`, [checkoutId]))[0].n);
  const fundingTxs = async (checkoutId: string) =>
    Number((await t.dataSource.query(`SELECT count(*)::int AS n FROM relayer_transactions r JOIN checkout_relays c ON r.reference = c.id::text WHERE c.checkout_session_id = $1`, [checkoutId]))[0].n);

  async function signedFunding(checkoutId: string, buyer: Wallet) {
    const res = await t.http.get(`/checkout/${checkoutId}/funding`).query({ buyer: buyer.address });
    expect(res.status).toBe(200);
    const typedData = res.body.typedData as TypedData;
    expect(typedData.primaryType).toBe('ReceiveWithAuthorization');
    expect(typedData.types.EIP712Domain.map((f) => f.name)).toEqual(['name', 'version', 'chainId', 'verifyingContract']);
    const m = typedData.message as Record<string, string>;
    return { typedData, body: { buyer: buyer.address, validAfter: m.validAfter, validBefore: m.validBefore, nonce: m.nonce, signature: await sign(buyer, typedData) } };
  }

  it('state, funding typed data, relay: a wallet with no ETH funds the checkout; checkout.funded follows; the page state shows the escrow', async () => {
    const checkout = await createCheckout(t, seller.org, { amount: '12.50' });
    const state0 = (await t.http.get(`/checkout/${checkout.id}/state`)).body;
    expect(state0).toMatchObject({ id: checkout.id, status: 'open', amount: '12500000', amountDecimal: '12.50', currency: 'USDC', escrow: null, allowedActions: ['pay'], chainId: 31337 });
    const buyer = await gaslessBuyer();
    const { body } = await signedFunding(checkout.id, buyer);
    const relayed = await t.http.post(`/checkout/${checkout.id}/relay`).send(body);
    expect(relayed.status).toBe(200);
    expect(relayed.body).toMatchObject({ status: 'broadcast', txHash: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
    expect((await chain.provider.waitForTransaction(relayed.body.txHash))!.status).toBe(1);
    await indexUntilStatus(t, seller.org, checkout.id, 'funded');
    expect(await chain.usdcBalance(buyer.address)).toBe(100n * USDC - 12_500_000n);
    expect((await checkoutEvents(t, checkout.id)).map((e) => e.type)).toEqual(['checkout.funded']);
    const state1 = (await t.http.get(`/checkout/${checkout.id}/state`)).body;
    expect(state1).toMatchObject({ status: 'funded', escrow: { status: 'funded', buyer: buyer.address }, allowedActions: ['release', 'cancel'] });
    // A replay answers the same relay (finished now) and sends nothing more.
    const replay = await t.http.post(`/checkout/${checkout.id}/relay`).send(body);
    expect(replay.body).toMatchObject({ status: 'finished', txHash: relayed.body.txHash, escrowId: state1.escrow.escrowId });
    expect(await fundingTxs(checkout.id)).toBe(1);
  });

  it('eight concurrent twins of one authorization: one relay row, one broadcast, every answer the same hash', async () => {
    const checkout = await createCheckout(t, seller.org, { amount: '3.00' });
    const buyer = await gaslessBuyer();
    const { body } = await signedFunding(checkout.id, buyer);
    const answers = await Promise.all(Array.from({ length: 8 }, () => t.http.post(`/checkout/${checkout.id}/relay`).send(body)));
    expect(answers.map((a) => a.status)).toEqual(Array(8).fill(200));
    expect(new Set(answers.map((a) => a.body.txHash)).size).toBe(1);
    expect(answers[0].body.txHash).toMatch(/^0x[0-9a-f]{64}$/);
    expect(await relayRows(checkout.id)).toBe(1);
    expect(await fundingTxs(checkout.id)).toBe(1);
    await indexUntilStatus(t, seller.org, checkout.id, 'funded');
    expect(await chain.usdcBalance(buyer.address)).toBe(97n * USDC);
  });

  it('a twin that checked the authorization before its twin relayed it, and simulates after that relay was mined, answers that relay (200, the same hash), not 409', async () => {
    const checkout = await createCheckout(t, seller.org, { amount: '2.00' });
    const buyer = await gaslessBuyer();
    const { body } = await signedFunding(checkout.id, buyer);
    // The interleaving forced, on the real chain: both twins found no relay row and reach the
    // simulation of this authorization; whichever arrives first goes on and relays (mined at once),
    // the other simulates only once the chain shows the authorization used. Other simulations pass.
    const gateway = t.app.get(ChainAccess).gateway;
    const simulate = gateway.simulate.bind(gateway);
    const nonceHex = body.nonce.toLowerCase().replace(/^0x/, '');
    let arrived = 0;
    let usedBeforeSecond: boolean | undefined;
    let bothArrived!: () => void;
    // Bounded: if the second twin never simulates, the first goes on and the assertions below say so.
    const both = Promise.race([new Promise<void>((r) => (bothArrived = r)), new Promise<void>((r) => setTimeout(r, 30_000).unref())]);
    const spy = jest.spyOn(gateway, 'simulate').mockImplementation(async (...args: Parameters<typeof gateway.simulate>) => {
      const [, , data, label] = args;
      if (label !== 'fundWithAuthorization' || !data.toLowerCase().includes(nonceHex)) return simulate(...args);
      const n = ++arrived;
      if (n === 2) bothArrived();
      await both;
      if (n === 2) {
        await waitFor(() => chain.usdc.authorizationState(buyer.address, body.nonce), { label: "the first twin's relay mined" });
        usedBeforeSecond = await chain.usdc.authorizationState(buyer.address, body.nonce);
      }
      return simulate(...args);
    });
    try {
      const a = t.http.post(`/checkout/${checkout.id}/relay`).send(body);
      const b = t.http.post(`/checkout/${checkout.id}/relay`).send(body);
      const [ra, rb] = await Promise.all([a, b]);
      expect(arrived).toBe(2);
      // The fault happened: the authorization was used on chain before the second simulation.
      expect(usedBeforeSecond).toBe(true);
      expect([ra.status, rb.status]).toEqual([200, 200]);
      expect(rb.body.txHash).toBe(ra.body.txHash);
    } finally {
      spy.mockRestore();
    }
    expect(await relayRows(checkout.id)).toBe(1);
    expect(await fundingTxs(checkout.id)).toBe(1);
  });

  it('refusals store nothing: bad signature, another buyer’s terms, no USDC, expired authorization, wrong nonce', async () => {
    const checkout = await createCheckout(t, seller.org, { amount: '5.00' });
    const buyer = await gaslessBuyer();
    const other = await gaslessBuyer();
    const { typedData, body } = await signedFunding(checkout.id, buyer);

    const forged = { ...body, signature: await sign(other, typedData) };
    expect(expectError(await t.http.post(`/checkout/${checkout.id}/relay`).send(forged), 400, 'invalid_request')).toMatchObject({ reason: 'bad_signature' });

    const theirs = await signedFunding(checkout.id, other);
    const swapped = { ...theirs.body, buyer: buyer.address, signature: await sign(buyer, theirs.typedData) };
    expect(expectError(await t.http.post(`/checkout/${checkout.id}/relay`).send(swapped), 400, 'invalid_request')).toMatchObject({ reason: 'wrong_terms' });

    const poor = await gaslessBuyer(1n * USDC);
    const poorBody = (await signedFunding(checkout.id, poor)).body;
    expect(expectError(await t.http.post(`/checkout/${checkout.id}/relay`).send(poorBody), 400, 'invalid_request')).toMatchObject({ reason: 'insufficient_balance' });

    const head = await chain.headTimestamp();
    const expiredTyped = { ...typedData, message: { ...typedData.message, validBefore: String(head - 10) } };
    const expired = { ...body, validBefore: String(head - 10), signature: await sign(buyer, expiredTyped) };
    expect(expectError(await t.http.post(`/checkout/${checkout.id}/relay`).send(expired), 400, 'invalid_request')).toMatchObject({ reason: 'expired' });

    expectError(await t.http.post(`/checkout/${checkout.id}/relay`).send({ ...body, nonce: '0x' + 'ab'.repeat(32) }), 400, 'invalid_request');
    expectError(await t.http.post(`/checkout/${checkout.id}/relay`).send({ ...body, signature: 'nope' }), 400, 'invalid_request');

    expect(await relayRows(checkout.id)).toBe(0);
    expect(await chain.usdcBalance(buyer.address)).toBe(100n * USDC);
    // The real buyer's nonce was not poisoned: the genuine authorization still goes through.
    expect((await t.http.post(`/checkout/${checkout.id}/relay`).send(body)).body).toMatchObject({ status: 'broadcast' });
  });

  it('a reservation left by a process that died before relaying is taken over by the retry and broadcast once', async () => {
    const checkout = await createCheckout(t, seller.org, { amount: '2.00' });
    const buyer = await gaslessBuyer();
    const { body } = await signedFunding(checkout.id, buyer);
    // The crash: the reservation committed, nothing handed to the relayer (recovery point "reserved").
    await t.dataSource.query(
      `INSERT INTO checkout_relays (id, checkout_session_id, buyer, nonce, valid_after, valid_before, signature, status, updated_at)
       VALUES (gen_random_uuid(), $1, $2, $3, $4, $5, $6, 'reserved', now() - interval '5 minutes')`,
      [checkout.id, buyer.address.toLowerCase(), body.nonce.toLowerCase(), body.validAfter, body.validBefore, body.signature],
    );
    const retried = await t.http.post(`/checkout/${checkout.id}/relay`).send(body);
    expect(retried.body).toMatchObject({ status: 'broadcast', txHash: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
    const again = await t.http.post(`/checkout/${checkout.id}/relay`).send(body);
    expect(again.body.txHash).toBe(retried.body.txHash);
    expect(await relayRows(checkout.id)).toBe(1);
    expect(await fundingTxs(checkout.id)).toBe(1);
  });

  it('a crash between "signed" and the broadcast: the retry sends the same signed transaction (same hash), once', async () => {
    const checkout = await createCheckout(t, seller.org, { amount: '1.50' });
    const buyer = await gaslessBuyer();
    const { body } = await signedFunding(checkout.id, buyer);
    const faults = relayerFaults;
    faults.at = 'after_signed';
    let first;
    try {
      first = await t.http.post(`/checkout/${checkout.id}/relay`).send(body);
    } finally {
      faults.at = null;
    }
    expect(first.body).toMatchObject({ status: 'reserved', txHash: null });
    const [signed] = await t.dataSource.query(
      `SELECT r.tx_hash, r.status, r.raw_tx IS NOT NULL AS has_raw FROM relayer_transactions r JOIN checkout_relays c ON r.reference = c.id::text WHERE c.checkout_session_id = $1`,
      [checkout.id],
    );
    expect(signed).toMatchObject({ status: 'queued', has_raw: true });
    expect(await chain.provider.getTransaction(signed.tx_hash)).toBeNull(); // signed, never broadcast
    const retried = await t.http.post(`/checkout/${checkout.id}/relay`).send(body);
    expect(retried.body).toMatchObject({ status: 'broadcast', txHash: signed.tx_hash });
    expect((await chain.provider.waitForTransaction(signed.tx_hash))!.status).toBe(1);
    expect(await fundingTxs(checkout.id)).toBe(1);
    await indexUntilStatus(t, seller.org, checkout.id, 'funded');
  });

  it('buyer actions by signature: release from the page after delivery; cancel while only funded; the wrong wallet and a replay are refused', async () => {
    const buyer = await gaslessBuyer();
    const stranger = await gaslessBuyer();
    const fund = async (amount: string) => {
      const checkout = await createCheckout(t, seller.org, { amount });
      const { body } = await signedFunding(checkout.id, buyer);
      expect((await t.http.post(`/checkout/${checkout.id}/relay`).send(body)).status).toBe(200);
      await indexUntilStatus(t, seller.org, checkout.id, 'funded');
      return checkout.id;
    };
    const act = async (checkoutId: string, action: string, wallet: Wallet) => {
      const typed = await t.http.get(`/checkout/${checkoutId}/actions/${action}`).query({ actor: wallet.address });
      if (typed.status !== 200) return typed;
      const m = typed.body.typedData.message as { nonce: string; deadline: number };
      return t.http
        .post(`/checkout/${checkoutId}/actions`)
        .send({ action, actor: wallet.address, nonce: m.nonce, deadline: Number(m.deadline), signature: await sign(wallet, typed.body.typedData) });
    };

    // cancel while funded: refund to the buyer, checkout.cancelled, and the page offers the checkout again
    const cancelId = await fund('4.00');
    expectError(await act(cancelId, 'cancel', stranger), 403, 'forbidden');
    const cancelled = await act(cancelId, 'cancel', buyer);
    expect(cancelled.body).toMatchObject({ status: 'broadcast', txHash: expect.stringMatching(/^0x/) });
    await indexUntilStatus(t, seller.org, cancelId, 'open');
    expect((await checkoutEvents(t, cancelId)).map((e) => e.type)).toEqual(['checkout.funded', 'checkout.cancelled']);
    expect((await t.http.get(`/checkout/${cancelId}/state`)).body).toMatchObject({ status: 'open', escrow: null });

    // release after the seller accepted and delivered (seller acts directly with gas)
    const releaseId = await fund('6.00');
    const state = (await t.http.get(`/checkout/${releaseId}/state`)).body;
    const key = (await t.http.get(`/api/v1/escrows/${state.escrow.escrowId}`).set('X-Api-Key', seller.org.key)).body.chain.escrowKey as string;
    await chain.act(seller.wallet, 'accept', key);
    await chain.act(seller.wallet, 'markDelivered', key);
    await indexUntilStatus(t, seller.org, releaseId, 'delivered');
    expect((await t.http.get(`/checkout/${releaseId}/state`)).body.allowedActions).toEqual(['release', 'dispute']);
    const sellerBefore = await chain.usdcBalance(seller.wallet.address);
    const typed = await t.http.get(`/checkout/${releaseId}/actions/release`).query({ actor: buyer.address });
    const m = typed.body.typedData.message as { nonce: string; deadline: number };
    const signed = { action: 'release', actor: buyer.address, nonce: m.nonce, deadline: Number(m.deadline), signature: await sign(buyer, typed.body.typedData) };
    expect(expectError(await t.http.post(`/checkout/${releaseId}/actions`).send({ ...signed, action: 'dispute' }), 400, 'invalid_request')).toMatchObject({ reason: 'bad_signature' });
    expect((await t.http.post(`/checkout/${releaseId}/actions`).send(signed)).status).toBe(200);
    await indexUntilStatus(t, seller.org, releaseId, 'released');
    expect(await chain.usdcBalance(seller.wallet.address)).toBe(sellerBefore + 6n * USDC);
    expect((await checkoutEvents(t, releaseId)).map((e) => e.type)).toEqual(['checkout.funded', 'checkout.accepted', 'checkout.released', 'checkout.paid']);
    // The same signed action again: the escrow moved on → 409, nothing sent.
    expectError(await t.http.post(`/checkout/${releaseId}/actions`).send(signed), 409, 'invalid_request');
  });

  it('unknown, expired and closed checkouts: 404 and 409 with the status, nothing to sign', async () => {
    expectError(await t.http.get('/checkout/not-a-uuid/state'), 404, 'not_found');
    expectError(await t.http.get('/checkout/01900000-0000-7000-8000-000000000000/state'), 404, 'not_found');
    const org = await createOrg(t.app, { payoutAddress: seller.wallet.address });
    const checkout = await createCheckout(t, org, { amount: '1.00' });
    await t.dataSource.query(`UPDATE checkout_sessions SET expires_at = now() - interval '1 minute' WHERE id = $1`, [checkout.id]);
    const state = (await t.http.get(`/checkout/${checkout.id}/state`)).body;
    expect(state).toMatchObject({ status: 'expired', allowedActions: [] });
    const buyer = await gaslessBuyer();
    expect(expectError(await t.http.get(`/checkout/${checkout.id}/funding`).query({ buyer: buyer.address }), 409, 'invalid_request')).toMatchObject({ status: 'expired' });
    expectError(await t.http.get(`/checkout/${checkout.id}/funding`).query({ buyer: 'nope' }), 400, 'invalid_request');
  });
});
