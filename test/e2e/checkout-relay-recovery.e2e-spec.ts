import type { INestApplicationContext } from '@nestjs/common';
import { Wallet } from 'ethers';
import { randomUUID } from 'node:crypto';
import { CheckoutRelayRepository } from '../../src/modules/checkout-relay/checkout-relay.repository';
import { startRelayerWorker } from '../support/agents';
import { createTestApp, TestApp } from '../support/app';
import { checkoutEvents, createCheckout, createParties, indexUntilStatus, Party, TestChain, USDC } from '../support/chain';
import { expectError } from '../support/errors';
import { waitFor } from '../support/wait';

jest.setTimeout(180_000);

type TypedData = { domain: Record<string, unknown>; types: Record<string, Array<{ name: string; type: string }>>; primaryType: string; message: Record<string, unknown> };

function sign(wallet: Wallet, typedData: TypedData): Promise<string> {
  const types = Object.fromEntries(Object.entries(typedData.types).filter(([k]) => k !== 'EIP712Domain'));
  return wallet.signTypedData(typedData.domain, types, typedData.message);
}

/**
 * The pay page's public relay on a chain that behaves like a public one (docs/architecture.md §16,
 * §18; issue 22 finding 3): a failed relay row can be taken over by a fully re-validated request of the
 * same buyer; a stranger's invalid body never changes the buyer's row; a broadcast the node dropped is
 * checked with authorizationState and sent again.
 */
describe('checkout relay recovery', () => {
  let t: TestApp;
  let chain: TestChain;
  let worker: INestApplicationContext | undefined;
  let seller: Party;

  beforeAll(async () => {
    // Short broadcast wait: one test holds the relayer worker back.
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
  const relayRow = async (buyer: string, nonce: string) =>
    (await t.dataSource.query(`SELECT status, signature, error, relay_tx_id, tx_hash, updated_at FROM checkout_relays WHERE buyer = $1 AND nonce = $2`, [buyer.toLowerCase(), nonce.toLowerCase()]))[0];

  it('a relay that failed at send time (the USDC moved away while it waited) is taken over once the buyer tops up and pays again: funded once', async () => {
    const checkout = await createCheckout(t, seller.org, { amount: '7.00' });
    const buyer = await chain.wallet({ usdc: 7n * USDC });
    const body = await signedFunding(checkout.id, buyer);
    // No relayer worker yet: the relay is reserved and queued.
    const queued = await t.http.post(`/checkout/${checkout.id}/relay`).send(body);
    expect(queued.status).toBe(200);
    expect(queued.body.status).toBe('reserved');
    const elsewhere = Wallet.createRandom().address;
    await chain.usdcTransfer(buyer, elsewhere, 7n * USDC);
    worker = await startRelayerWorker();
    const failed = await t.http.post(`/checkout/${checkout.id}/relay`).send(body);
    expect(expectError(failed, 400, 'invalid_request')).toMatchObject({ reason: 'insufficient_balance' });
    expect((await relayRow(buyer.address, body.nonce)).status).toBe('failed');
    // Topped up to exactly the amount, the buyer signs again (the same terms digest is the nonce) and pays again.
    await chain.mintUsdc(buyer.address, 7n * USDC);
    const again = await signedFunding(checkout.id, buyer);
    expect(again.nonce).toBe(body.nonce);
    const paid = await t.http.post(`/checkout/${checkout.id}/relay`).send(again);
    expect(paid.status).toBe(200);
    expect(paid.body).toMatchObject({ status: 'broadcast', txHash: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
    await indexUntilStatus(t, seller.org, checkout.id, 'funded');
    expect(await chain.usdcBalance(buyer.address)).toBe(0n);
    expect((await checkoutEvents(t, checkout.id)).map((e) => e.type)).toEqual(['checkout.funded']);
  });

  it("a stranger's invalid body (signature 0x11…) on the buyer's left-behind reservation → 400, and the buyer's row is untouched; the buyer's retry relays it", async () => {
    worker ??= await startRelayerWorker();
    const checkout = await createCheckout(t, seller.org, { amount: '3.00' });
    const buyer = await chain.wallet({ usdc: 3n * USDC, eth: false });
    const body = await signedFunding(checkout.id, buyer);
    // What a process that died right after the reservation leaves: the row, no relayer transaction; a minute passes.
    expect(await t.app.get(CheckoutRelayRepository).reserve({ id: randomUUID(), checkoutSessionId: checkout.id, buyer: buyer.address, nonce: body.nonce, validAfter: BigInt(body.validAfter), validBefore: BigInt(body.validBefore), signature: body.signature })).toBe(true);
    await t.dataSource.query(`UPDATE checkout_relays SET updated_at = now() - interval '2 minutes' WHERE buyer = $1 AND nonce = $2`, [buyer.address.toLowerCase(), body.nonce.toLowerCase()]);
    const before = await relayRow(buyer.address, body.nonce);
    const poison = await t.http.post(`/checkout/${checkout.id}/relay`).send({ ...body, signature: '0x' + '11'.repeat(65) });
    expectError(poison, 400, 'invalid_request');
    expect(await relayRow(buyer.address, body.nonce)).toEqual(before);
    const paid = await t.http.post(`/checkout/${checkout.id}/relay`).send(body);
    expect(paid.status).toBe(200);
    expect(paid.body.status).toBe('broadcast');
    await indexUntilStatus(t, seller.org, checkout.id, 'funded');
  });

  it('a broadcast the node dropped is checked with authorizationState and sent again: funded once', async () => {
    worker ??= await startRelayerWorker();
    const checkout = await createCheckout(t, seller.org, { amount: '5.00' });
    const buyer = await chain.wallet({ usdc: 5n * USDC, eth: false });
    const body = await signedFunding(checkout.id, buyer);
    let dropped: string;
    await chain.rpc('evm_setAutomine', [false]);
    try {
      const first = await t.http.post(`/checkout/${checkout.id}/relay`).send(body);
      expect(first.body.status).toBe('broadcast');
      dropped = first.body.txHash;
      await chain.rpc('anvil_dropTransaction', [dropped]);
      await waitFor(async () => (await chain.provider.getTransaction(dropped)) === null, { label: 'transaction dropped' });
      const again = await t.http.post(`/checkout/${checkout.id}/relay`).send(body);
      expect(again.status).toBe(200);
      expect(again.body).toMatchObject({ status: 'broadcast', txHash: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
      // Sent again from the relayer's stored bytes (the same bytes give the same hash).
      expect(await chain.provider.getTransaction(again.body.txHash)).not.toBeNull();
    } finally {
      await chain.rpc('evm_setAutomine', [true]);
    }
    await chain.mine();
    await indexUntilStatus(t, seller.org, checkout.id, 'funded');
    expect(await chain.usdcBalance(buyer.address)).toBe(0n);
    expect((await checkoutEvents(t, checkout.id)).map((e) => e.type)).toEqual(['checkout.funded']);
  });
});
