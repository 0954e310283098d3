import { randomBytes, randomUUID } from 'node:crypto';
import { Interface } from 'ethers';
import { CheckoutEscrowArtifact } from '@lib/contracts';
import { ChainTxError } from '@lib/chain';
import { createTestApp, TestApp } from '../support/app';
import { expectError, expectInvalidParam } from '../support/errors';
import {
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

jest.setTimeout(60_000);

const randomHash = () => `0x${randomBytes(32).toString('hex')}`;
const ESCROW_IFACE = new Interface(CheckoutEscrowArtifact.abi);

/**
 * Every refusal of the escrow API and of funding (docs/architecture.md §4, §5, §7): chain verification reasons,
 * the wrong party, confirm and Idempotency-Key rules, state conflicts, escrows of others, and
 * funding with tampered or expired terms. Check order: 404 → confirm_required → 403 → already
 * recorded → 409 state → chain verification.
 */
describe('escrow refusals', () => {
  let t: TestApp;
  let chain: TestChain;
  let seller: Party;
  let buyer: Party;
  let outsider: Party;

  beforeAll(async () => {
    t = await createTestApp();
    chain = new TestChain();
    ({ seller, buyer } = await createParties(t, chain, 10_000n * USDC));
    outsider = (await createParties(t, chain, 0n)).seller;
  });
  afterAll(async () => {
    chain?.close();
    await t?.close();
  });

  const post = (party: Party, path: string, body: object, idempotencyKey: string | null = randomUUID()) => {
    const req = t.http.post(`/api/v1/escrows/${path}`).set('X-Api-Key', party.org.key);
    if (idempotencyKey) req.set('Idempotency-Key', idempotencyKey);
    return req.send(body);
  };
  const status = async (escrowId: string) => (await t.http.get(`/api/v1/escrows/${escrowId}`).set('X-Api-Key', seller.org.key)).body.status as string;

  /** A fresh checkout funded on-chain and indexed; optionally driven further through the API. */
  async function escrowIn(state: 'funded' | 'accepted' | 'delivered' | 'released', body: Record<string, unknown> = {}) {
    const checkout = await createCheckout(t, seller.org, { amount: '3.00', ...body });
    await fundOnChain(t, chain, checkout.id, buyer.wallet);
    const escrowId = (await indexUntilStatus(t, seller.org, checkout.id, 'funded')).escrowId as string;
    const key = (await t.http.get(`/api/v1/escrows/${escrowId}`).set('X-Api-Key', seller.org.key)).body.chain.escrowKey as string;
    if (state === 'released') {
      await post(buyer, `${escrowId}/release`, { txHash: await chain.act(buyer.wallet, 'release', key), confirm: true }).expect(200);
    }
    if (state === 'accepted' || state === 'delivered') {
      await post(seller, `${escrowId}/accept`, { txHash: await chain.act(seller.wallet, 'accept', key) }).expect(200);
    }
    if (state === 'delivered') {
      await post(seller, `${escrowId}/mark-delivered`, { txHash: await chain.act(seller.wallet, 'markDelivered', key) }).expect(200);
    }
    return { checkout, escrowId, key };
  }

  describe('txHash verification on the chain → 400 invalid_request with details.reason', () => {
    it('not_found: a hash the node does not know', async () => {
      const { escrowId } = await escrowIn('funded');
      const txHash = randomHash();
      const details = expectError(await post(seller, `${escrowId}/accept`, { txHash }), 400, 'invalid_request');
      expect(details).toMatchObject({ reason: 'not_found', txHash, fields: [{ param: 'txHash', message: expect.any(String) }] });
      expect(await status(escrowId)).toBe('funded');
    });

    it('failed: a mined transaction that reverted', async () => {
      const { escrowId, key } = await escrowIn('funded');
      const txHash = await chain.sendUnchecked(outsider.wallet, 'accept', key); // NotSeller, mined with status 0
      expect((await chain.provider.getTransactionReceipt(txHash))!.status).toBe(0);
      expect(expectError(await post(seller, `${escrowId}/accept`, { txHash }), 400, 'invalid_request')).toMatchObject({ reason: 'failed' });
      expect(await status(escrowId)).toBe('funded');
    });

    it('wrong_contract: a transaction to another contract (a USDC transfer)', async () => {
      const { escrowId } = await escrowIn('funded');
      const txHash = await chain.usdcTransfer(buyer.wallet, seller.wallet.address, 1n);
      expect(expectError(await post(seller, `${escrowId}/accept`, { txHash }), 400, 'invalid_request')).toMatchObject({ reason: 'wrong_contract' });
      expect(await status(escrowId)).toBe('funded');
    });

    it('wrong_escrow: a valid accept of another escrow', async () => {
      const a = await escrowIn('funded');
      const b = await escrowIn('funded');
      const txHash = await chain.act(seller.wallet, 'accept', b.key);
      expect(expectError(await post(seller, `${a.escrowId}/accept`, { txHash }), 400, 'invalid_request')).toMatchObject({ reason: 'wrong_escrow' });
      expect(await status(a.escrowId)).toBe('funded');
      expect((await post(seller, `${b.escrowId}/accept`, { txHash })).body.status).toBe('accepted');
    });

    it('wrong_action: an accept reported as a decline', async () => {
      const { escrowId, key } = await escrowIn('funded');
      const txHash = await chain.act(seller.wallet, 'accept', key);
      expect(expectError(await post(seller, `${escrowId}/decline`, { txHash }), 400, 'invalid_request')).toMatchObject({ reason: 'wrong_action' });
      expect(await status(escrowId)).toBe('funded');
      expect((await post(seller, `${escrowId}/accept`, { txHash })).body.status).toBe('accepted');
    });

    it('wrong_sender: a release sent by a third party after the inspection window, reported by the buyer', async () => {
      const { checkout, escrowId, key } = await escrowIn('delivered', { escrowTemplateId: 'custom', metadata: { inspectionWindowHours: 1 } });
      const onChain = await chain.gateway.getOnChainEscrow(key);
      await chain.increaseTime(Math.max(1, onChain.deliveredAt + onChain.inspectionWindow - (await chain.headTimestamp()) + 1));
      // The contract lets anyone release now; the API accepts only the buyer's own release.
      const txHash = await chain.act(outsider.wallet, 'release', key);
      const details = expectError(await post(buyer, `${escrowId}/release`, { txHash, confirm: true }), 400, 'invalid_request');
      expect(details).toMatchObject({ reason: 'wrong_sender' });
      expect(await status(escrowId)).toBe('delivered');
      // The release is still a fact on the chain: the indexer applies it.
      await indexUntilStatus(t, seller.org, checkout.id, 'released');
      expect((await checkoutEvents(t, checkout.id)).map((e) => e.type)).toEqual(['checkout.funded', 'checkout.accepted', 'checkout.released', 'checkout.paid']);
    });

    it('pending: a transaction not mined yet → 409 reason pending, not stored; the same request succeeds once mined', async () => {
      const { escrowId, key } = await escrowIn('funded');
      await chain.rpc('evm_setAutomine', [false]);
      let txHash: string;
      try {
        const tx = await seller.wallet.sendTransaction({ to: chain.gateway.escrowAddress, data: ESCROW_IFACE.encodeFunctionData('accept', [key]), gasLimit: 200_000n });
        txHash = tx.hash;
        const pending = await post(seller, `${escrowId}/accept`, { txHash }, 'accept-pending');
        expect(expectError(pending, 409, 'invalid_request')).toMatchObject({ reason: 'pending', txHash });
        await chain.rpc('evm_mine');
      } finally {
        await chain.rpc('evm_setAutomine', [true]);
      }
      const mined = await post(seller, `${escrowId}/accept`, { txHash }, 'accept-pending');
      expect(mined.status).toBe(200);
      expect(mined.headers['idempotent-replayed']).toBe('false');
      expect(mined.body.status).toBe('accepted');
    });
  });

  describe('parties', () => {
    it('a business refusal under an Idempotency-Key is stored and replayed, and a 409 state conflict too (docs/architecture.md §5)', async () => {
      const { escrowId } = await escrowIn('funded');
      const key = randomUUID();
      const body = { txHash: randomHash(), confirm: true };
      const first = await post(seller, `${escrowId}/release`, body, key);
      expectError(first, 403, 'forbidden');
      expect(first.headers['idempotent-replayed']).toBe('false');
      const again = await post(seller, `${escrowId}/release`, body, key);
      expectError(again, 403, 'forbidden');
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect({ ...again.body, requestId: undefined }).toEqual({ ...first.body, requestId: undefined });
      const rows: Array<{ response_status: number }> = await t.dataSource.query(
        'SELECT response_status FROM idempotency_records WHERE idempotency_key = $1',
        [key],
      );
      expect(rows).toEqual([{ response_status: 403 }]);

      const stateKey = randomUUID();
      const stateBody = { txHash: randomHash() };
      const conflict = await post(seller, `${escrowId}/mark-delivered`, stateBody, stateKey);
      expect(expectError(conflict, 409, 'invalid_request')).toMatchObject({ status: 'funded', allowed: ['accepted'] });
      const conflictReplay = await post(seller, `${escrowId}/mark-delivered`, stateBody, stateKey);
      expectError(conflictReplay, 409, 'invalid_request');
      expect(conflictReplay.headers['idempotent-replayed']).toBe('true');
      expectError(await post(seller, `${escrowId}/mark-delivered`, { txHash: randomHash() }, stateKey), 422, 'idempotency_conflict');
    });

    it('the buyer reporting a valid accept → 403 forbidden, before any chain check', async () => {
      const { escrowId, key } = await escrowIn('funded');
      const txHash = await chain.act(seller.wallet, 'accept', key);
      expect(expectError(await post(buyer, `${escrowId}/accept`, { txHash }), 403, 'forbidden')).toMatchObject({ role: 'buyer' });
      // Not even looked up: an unknown hash gets the same 403, not 400 not_found.
      expectError(await post(buyer, `${escrowId}/accept`, { txHash: randomHash() }), 403, 'forbidden');
      expect(await status(escrowId)).toBe('funded');
      expect((await post(seller, `${escrowId}/accept`, { txHash })).body.status).toBe('accepted');
    });

    it('the wrong party gets 403 whatever the state; the seller cannot release or cancel, the buyer cannot decline or mark delivered', async () => {
      const funded = await escrowIn('funded');
      const released = await escrowIn('released');
      for (const { escrowId } of [funded, released]) {
        expectError(await post(seller, `${escrowId}/release`, { txHash: randomHash(), confirm: true }), 403, 'forbidden');
        expectError(await post(seller, `${escrowId}/cancel`, { txHash: randomHash() }), 403, 'forbidden');
        expectError(await post(buyer, `${escrowId}/decline`, { txHash: randomHash() }), 403, 'forbidden');
        expectError(await post(buyer, `${escrowId}/mark-delivered`, { txHash: randomHash() }), 403, 'forbidden');
        expectError(await post(buyer, `${escrowId}/accept`, { txHash: randomHash() }), 403, 'forbidden');
      }
    });

    it('an organisation that is no party gets 404 on read and on every action; so do unknown and malformed ids', async () => {
      const { escrowId } = await escrowIn('funded');
      expectError(await t.http.get(`/api/v1/escrows/${escrowId}`).set('X-Api-Key', outsider.org.key), 404, 'not_found');
      for (const action of ['accept', 'decline', 'mark-delivered', 'release', 'cancel', 'dispute']) {
        expectError(await post(outsider, `${escrowId}/${action}`, { txHash: randomHash(), confirm: true }), 404, 'not_found');
      }
      expectError(await t.http.get(`/api/v1/escrows/${randomUUID()}`).set('X-Api-Key', seller.org.key), 404, 'not_found');
      expectError(await t.http.get('/api/v1/escrows/not-a-uuid').set('X-Api-Key', seller.org.key), 404, 'not_found');
      expectError(await post(seller, `${randomUUID()}/accept`, { txHash: randomHash() }), 404, 'not_found');
      expect(await status(escrowId)).toBe('funded');
    });
  });

  describe('request rules', () => {
    it('release and dispute need confirm: true (literally) → 400 confirm_required', async () => {
      const { escrowId } = await escrowIn('accepted');
      for (const body of [{}, { confirm: 'true' }, { confirm: 1 }, { confirm: false }]) {
        const txHash = randomHash();
        expectError(await post(buyer, `${escrowId}/release`, { txHash, ...body }), 400, 'confirm_required');
        expectError(await post(buyer, `${escrowId}/dispute`, { txHash, ...body }), 400, 'confirm_required');
      }
      expect(await status(escrowId)).toBe('accepted');
    });

    it('release, dispute, cancel and decline need an Idempotency-Key → 400 idempotency_required; accept and mark-delivered do not', async () => {
      const { escrowId } = await escrowIn('funded');
      expectError(await post(buyer, `${escrowId}/release`, { txHash: randomHash(), confirm: true }, null), 400, 'idempotency_required');
      expectError(await post(buyer, `${escrowId}/dispute`, { txHash: randomHash(), confirm: true }, null), 400, 'idempotency_required');
      expectError(await post(buyer, `${escrowId}/cancel`, { txHash: randomHash() }, null), 400, 'idempotency_required');
      expectError(await post(seller, `${escrowId}/decline`, { txHash: randomHash() }, null), 400, 'idempotency_required');
      // Without a key these reach the service: a chain check (accept) or the state rule (mark-delivered).
      expect(expectError(await post(seller, `${escrowId}/accept`, { txHash: randomHash() }, null), 400, 'invalid_request')).toMatchObject({ reason: 'not_found' });
      expectError(await post(seller, `${escrowId}/mark-delivered`, { txHash: randomHash() }, null), 409, 'invalid_request');
      expect(await status(escrowId)).toBe('funded');
    });

    it('a missing or malformed txHash → 400 naming txHash', async () => {
      const { escrowId } = await escrowIn('funded');
      expectInvalidParam(await post(seller, `${escrowId}/accept`, {}), 'txHash');
      expectInvalidParam(await post(seller, `${escrowId}/accept`, { txHash: '0x1234' }), 'txHash');
      expectInvalidParam(await post(seller, `${escrowId}/accept`, { txHash: 42 }), 'txHash');
    });

    it('state conflicts → 409 invalid_request with details.status and details.allowed', async () => {
      const conflict = async (party: Party, path: string, body: object, status: string, allowed: string[]) => {
        const details = expectError(await post(party, path, { txHash: randomHash(), ...body }), 409, 'invalid_request');
        expect(details).toMatchObject({ status, allowed });
      };
      const f = await escrowIn('funded');
      await conflict(seller, `${f.escrowId}/mark-delivered`, {}, 'funded', ['accepted']);
      await conflict(buyer, `${f.escrowId}/dispute`, { confirm: true }, 'funded', ['accepted', 'delivered']);
      await conflict(seller, `${f.escrowId}/dispute`, { confirm: true }, 'funded', ['accepted', 'delivered']);

      const a = await escrowIn('accepted');
      await conflict(buyer, `${a.escrowId}/cancel`, {}, 'accepted', ['funded']);
      await conflict(seller, `${a.escrowId}/accept`, {}, 'accepted', ['funded']);

      const d = await escrowIn('delivered');
      await conflict(seller, `${d.escrowId}/decline`, {}, 'delivered', ['funded', 'accepted']);
      await conflict(seller, `${d.escrowId}/mark-delivered`, {}, 'delivered', ['accepted']);

      const r = await escrowIn('released');
      await conflict(buyer, `${r.escrowId}/release`, { confirm: true }, 'released', ['funded', 'accepted', 'delivered']);
      await conflict(buyer, `${r.escrowId}/cancel`, {}, 'released', ['funded']);
      await conflict(seller, `${r.escrowId}/decline`, {}, 'released', ['funded', 'accepted']);
      await conflict(buyer, `${r.escrowId}/dispute`, { confirm: true }, 'released', ['accepted', 'delivered']);
    });
  });

  describe('funding refused on-chain; the checkout stays open', () => {
    async function expectStillOpen(checkoutId: string, escrowKey: string, buyerBalance: bigint) {
      await pollToHead(t, chain);
      expect(await getCheckout(t, seller.org, checkoutId)).toMatchObject({ status: 'open', escrowId: null });
      expect((await chain.gateway.getOnChainEscrow(escrowKey)).state).toBe('none');
      expect(await chain.usdcBalance(buyer.wallet.address)).toBe(buyerBalance);
      expect(await checkoutEvents(t, checkoutId)).toEqual([]);
    }

    it('terms for another amount (the service signature on an edited amount, or terms the buyer signed itself) revert', async () => {
      const checkout = await createCheckout(t, seller.org, { amount: '50.00' });
      const { funding, terms } = await fundingTerms(t, checkout.id, buyer.wallet.address);
      const balance = await chain.usdcBalance(buyer.wallet.address);
      const cheaper = { ...terms, amount: 1n * USDC };

      await expect(chain.fundWithAuthorization(buyer.wallet, cheaper, funding.termsSignature)).rejects.toMatchObject({
        name: 'ChainTxError',
        errorName: 'InvalidTermsSignature',
      });
      const selfSigned = await chain.gateway.signFundingTerms(buyer.wallet, cheaper, 31337);
      await expect(chain.fundWithAuthorization(buyer.wallet, cheaper, selfSigned)).rejects.toBeInstanceOf(ChainTxError);
      await expect(chain.senders.fundWithTerms(buyer.wallet, cheaper, selfSigned)).rejects.toMatchObject({ errorName: 'InvalidTermsSignature' });
      // Even mined (no gas estimate), the call reverts.
      const tx = await buyer.wallet.sendTransaction({
        to: chain.gateway.escrowAddress,
        data: ESCROW_IFACE.encodeFunctionData('fund', [
          { escrowId: cheaper.escrowKey, buyer: cheaper.buyer, seller: cheaper.seller, amount: cheaper.amount, inspectionWindow: cheaper.inspectionWindow, deadline: cheaper.deadline },
          funding.termsSignature,
        ]),
        gasLimit: 300_000n,
      });
      expect((await chain.provider.waitForTransaction(tx.hash))!.status).toBe(0);
      await expectStillOpen(checkout.id, terms.escrowKey, balance);

      // The genuine terms still fund it.
      await chain.fundWithAuthorization(buyer.wallet, terms, funding.termsSignature);
      await indexUntilStatus(t, seller.org, checkout.id, 'funded');
      expect(await chain.usdcBalance(buyer.wallet.address)).toBe(balance - 50n * USDC);
    });

    it('terms past their deadline (the checkout expiresAt) revert with TermsExpired', async () => {
      const expiresAt = new Date(Date.now() + 31 * 60_000).toISOString();
      const checkout = await createCheckout(t, seller.org, { amount: '5.00', expiresAt });
      const { funding, terms } = await fundingTerms(t, checkout.id, buyer.wallet.address);
      expect(terms.deadline).toBe(Math.floor(Date.parse(checkout.expiresAt as string) / 1000));
      const balance = await chain.usdcBalance(buyer.wallet.address);

      await chain.increaseTime(Math.max(1, Number(terms.deadline) - (await chain.headTimestamp()) + 1));
      await expect(chain.fundWithAuthorization(buyer.wallet, terms, funding.termsSignature)).rejects.toMatchObject({ errorName: 'TermsExpired' });
      await expect(chain.senders.fundWithTerms(buyer.wallet, terms, funding.termsSignature)).rejects.toMatchObject({ errorName: 'TermsExpired' });
      // The wall clock has not reached expiresAt: the checkout is still open (and would be payable with fresh terms).
      await expectStillOpen(checkout.id, terms.escrowKey, balance);
    });
  });
});
