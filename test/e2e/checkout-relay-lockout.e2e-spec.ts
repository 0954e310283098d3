import type { INestApplicationContext } from '@nestjs/common';
import { Wallet } from 'ethers';
import { startRelayerWorker } from '../support/agents';
import { createTestApp, TestApp } from '../support/app';
import { checkoutEvents, createCheckout, createParties, indexUntilStatus, Party, TestChain, USDC } from '../support/chain';
import { waitFor } from '../support/wait';

jest.setTimeout(180_000);

type TypedData = { domain: Record<string, unknown>; types: Record<string, Array<{ name: string; type: string }>>; primaryType: string; message: Record<string, unknown> };

function sign(wallet: Wallet, typedData: TypedData): Promise<string> {
  const types = Object.fromEntries(Object.entries(typedData.types).filter(([k]) => k !== 'EIP712Domain'));
  return wallet.signTypedData(typedData.domain, types, typedData.message);
}

/**
 * Issue 29 finding 8, seen from outside: the relay lockout. The buyer's first gasless funding was
 * queued and failed at send time (its USDC moved away while the relay waited); the buyer never
 * looked at that outcome, topped up to exactly the amount, signed again and must be funded, once —
 * not answered 400 `insufficient_balance` from the failed relayer row while holding the amount.
 */
describe('checkout relay lockout (issue 29 finding 8)', () => {
  let t: TestApp;
  let chain: TestChain;
  let worker: INestApplicationContext | undefined;
  let seller: Party;

  beforeAll(async () => {
    t = await createTestApp({ RELAYER_WAIT_MS: '1000' });
    chain = new TestChain();
    ({ seller } = await createParties(t, chain, 0n));
  });
  afterAll(async () => {
    chain?.close();
    await worker?.close();
    await t?.close();
  });

  async function signedFunding(checkoutId: string, buyer: Wallet) {
    const res = await t.http.get(`/checkout/${checkoutId}/funding`).query({ buyer: buyer.address });
    expect(res.status).toBe(200);
    const typedData = res.body.typedData as TypedData;
    const m = typedData.message as Record<string, string>;
    return { buyer: buyer.address, validAfter: m.validAfter, validBefore: m.validBefore, nonce: m.nonce, signature: await sign(buyer, typedData) };
  }

  it('a funding that failed at send time while queued: the topped-up buyer signs again and the checkout is funded, once', async () => {
    const checkout = await createCheckout(t, seller.org, { amount: '7.00' });
    const buyer = await chain.wallet({ usdc: 7n * USDC });
    const body = await signedFunding(checkout.id, buyer);
    // No relayer worker yet: the relay is reserved and queued.
    const queued = await t.http.post(`/checkout/${checkout.id}/relay`).send(body);
    expect(queued.status).toBe(200);
    expect(queued.body.status).toBe('reserved');
    const [{ relay_tx_id: relayTxId }] = await t.dataSource.query(`SELECT relay_tx_id FROM checkout_relays WHERE buyer = $1 AND nonce = $2`, [buyer.address.toLowerCase(), body.nonce.toLowerCase()]);
    expect(relayTxId).toEqual(expect.any(String));
    // The USDC moves away while the relay waits; the worker then fails it at send time.
    await chain.usdcTransfer(buyer, Wallet.createRandom().address, 7n * USDC);
    worker = await startRelayerWorker();
    await waitFor(async () => (await t.dataSource.query(`SELECT status FROM relayer_transactions WHERE id = $1`, [relayTxId]))[0]?.status === 'failed', { timeoutMs: 30_000 });
    // Proof of the fault: the relayer row failed, the checkout is still open.
    expect((await t.http.get(`/checkout/${checkout.id}/state`)).body.status).toBe('open');

    // Topped up to exactly the amount (read on chain right before signing), the buyer signs again.
    await chain.mintUsdc(buyer.address, 7n * USDC);
    expect(await chain.usdcBalance(buyer.address)).toBe(7n * USDC);
    const again = await signedFunding(checkout.id, buyer);
    expect(again.nonce).toBe(body.nonce);
    const paid = await t.http.post(`/checkout/${checkout.id}/relay`).send(again);
    expect([paid.status, paid.body.details?.reason ?? null]).toEqual([200, null]);
    expect(paid.body).toMatchObject({ status: 'broadcast', txHash: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
    await indexUntilStatus(t, seller.org, checkout.id, 'funded');
    expect(await chain.usdcBalance(buyer.address)).toBe(0n);
    expect((await checkoutEvents(t, checkout.id)).map((e) => e.type)).toEqual(['checkout.funded']);
    // Once: one live relay row for the checkout, and a replay of the same body answers it.
    const rows = await t.dataSource.query(`SELECT status FROM checkout_relays WHERE checkout_session_id = $1`, [checkout.id]);
    expect(rows).toEqual([{ status: 'broadcast' }]);
    const replay = await t.http.post(`/checkout/${checkout.id}/relay`).send(again);
    expect(replay.status).toBe(200);
    expect(replay.body.status).toBe('finished');
  });
});
