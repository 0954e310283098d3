import { randomUUID } from 'node:crypto';
import type { Wallet } from 'ethers';
import { createTestApp, TestApp } from '../support/app';
import { createCheckout, createParties, fundOnChain, indexUntilStatus, Party, TestChain } from '../support/chain';
import { RefundsService } from '../../src/modules/refunds/refunds.service';

jest.setTimeout(180_000);

/**
 * Review F1 (DESIGN §21, §18): a refund's expiry is decided from ONE read at the confirmation depth
 * (authorizationState and chain time of head − CONFIRMATIONS), never from the latest block. A branch
 * whose latest block is past validBefore with the nonce unused may still be replaced by one where the
 * refund's transfer was mined in time. Moves chain time forward: its own file.
 */
describe('refund expiry at the confirmation depth (review F1)', () => {
  let t: TestApp;
  let chain: TestChain;

  beforeAll(async () => {
    t = await createTestApp({ CONFIRMATIONS: '2', REFUND_VALIDITY_S: '300' });
    chain = new TestChain();
  });
  afterAll(async () => {
    await t?.close();
    chain?.close();
  });

  async function released(amount: string) {
    const { seller, buyer } = await createParties(t, chain);
    const checkout = await createCheckout(t, seller.org, { amount });
    await fundOnChain(t, chain, checkout.id, buyer.wallet);
    await chain.mine(2);
    const funded = await indexUntilStatus(t, seller.org, checkout.id, 'funded');
    const escrow = (await t.http.get(`/api/v1/escrows/${funded.escrowId as string}`).set('X-Api-Key', seller.org.key)).body;
    await chain.act(buyer.wallet, 'release', escrow.chain.escrowKey as string);
    await chain.mine(2);
    await indexUntilStatus(t, seller.org, checkout.id, 'released');
    return { seller, buyer, checkout };
  }
  const getRefund = async (seller: Party, id: string) => (await t.http.get(`/api/v1/refunds/${id}`).set('X-Api-Key', seller.org.key).expect(200)).body;
  const getCheckout = async (seller: Party, id: string) => (await t.http.get(`/api/v1/checkout-sessions/${id}`).set('X-Api-Key', seller.org.key).expect(200)).body;
  const sign = (wallet: Wallet, typedData: { domain: Record<string, unknown>; types: Record<string, Array<{ name: string; type: string }>>; message: Record<string, string> }) =>
    wallet.signTypedData(typedData.domain, typedData.types, typedData.message);

  it('the latest block past validBefore with the nonce unused is not "expired" while the confirmed block is not; the branch with the transfer mined in time then settles succeeded', async () => {
    const { seller, checkout } = await released('25.00');
    const refund = (
      await t.http.post(`/api/v1/checkout-sessions/${checkout.id}/refunds`).set('X-Api-Key', seller.org.key).set('Idempotency-Key', randomUUID()).send({ amount: '25.00' }).expect(200)
    ).body;
    const signature = await sign(seller.wallet, refund.typedData);
    const validBefore = Number(refund.typedData.message.validBefore);
    const watcher = t.app.get(RefundsService);

    // A branch without the transfer: its latest block is past validBefore, the nonce unused there.
    const snapshot = await chain.snapshot();
    await chain.rpc('evm_setNextBlockTimestamp', [validBefore + 1]);
    await chain.rpc('evm_mine');
    expect(await chain.headTimestamp()).toBeGreaterThanOrEqual(validBefore);
    await watcher.watchOnce();
    expect(await getRefund(seller, refund.id)).toMatchObject({ status: 'requires_signature', failureReason: null });

    // That branch is replaced by one where the seller's authorization was used in time.
    await chain.revert(snapshot);
    await chain.rpc('evm_setNextBlockTimestamp', [validBefore - 5]);
    const sender = await chain.wallet();
    const m = refund.typedData.message;
    const data = chain.usdc.encodeTransferWithAuthorization({ from: m.from, to: m.to, value: BigInt(m.value), validAfter: 0n, validBefore: BigInt(validBefore), nonce: m.nonce, signature });
    const tx = await sender.sendTransaction({ to: chain.usdc.address, data });
    expect((await chain.provider.waitForTransaction(tx.hash))?.status).toBe(1);
    await chain.increaseTime(60);
    await chain.mine(2);
    await watcher.watchOnce();
    expect(await getRefund(seller, refund.id)).toMatchObject({ status: 'succeeded', failureReason: null, txHash: tx.hash.toLowerCase() });
    expect((await getCheckout(seller, checkout.id)).refundedAmount).toBe('25.00');
  });
});
