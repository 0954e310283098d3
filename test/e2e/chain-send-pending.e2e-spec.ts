import { createTestApp, TestApp } from '../support/app';
import { fundingTerms, TestChain, USDC } from '../support/chain';
import { expectError } from '../support/errors';
import { createOrg } from '../support/factories';

jest.setTimeout(120_000);

/**
 * Review F3 (DESIGN §18, §22: every chain wait is bounded; pending is not failed), through a caller of
 * TxSender: invoice void burns the checkout's escrow id with `voidTerms`. With mining stopped the
 * request answers within CHAIN_WAIT_MS 409 `pending` with the broadcast hash (it hung before), the
 * invoice is not voided, and the void retried once the chain mined it completes (no second burn needed).
 */
describe('a direct chain send not mined within CHAIN_WAIT_MS (review F3)', () => {
  let t: TestApp;
  let chain: TestChain;

  beforeAll(async () => {
    t = await createTestApp({ CHAIN_WAIT_MS: '1000' });
    chain = new TestChain();
  });
  afterAll(async () => {
    await chain?.provider.send('evm_setAutomine', [true]);
    chain?.close();
    await t?.close();
  });

  it('invoice void answers 409 pending with the voidTerms hash, leaves the invoice open, and completes on retry after the chain mined it', async () => {
    const seller = await createOrg(t.app, { payoutAddress: (await chain.wallet()).address });
    const created = await t.http.post('/api/v1/invoices').set('X-Api-Key', seller.key).send({ customer: { name: 'Ada', email: 'ada@example.com' }, lineItems: [{ description: 'Work', unitAmount: '10.00' }] });
    const id = created.body.id as string;
    expect((await t.http.post(`/api/v1/invoices/${id}/send`).set('X-Api-Key', seller.key).send({})).status).toBe(200);
    const checkoutId = /data-checkout-id="([0-9a-f-]{36})"/.exec((await t.http.get(`/invoices/${id}`)).text)![1];
    const buyer = await chain.wallet({ usdc: 100n * USDC });
    const { terms } = await fundingTerms(t, checkoutId, buyer.address);

    await chain.provider.send('evm_setAutomine', [false]);
    const pending = await t.http.post(`/api/v1/invoices/${id}/void`).set('X-Api-Key', seller.key).send({});
    const details = expectError(pending, 409, 'invalid_request') as { reason: string; txHash: string };
    expect(details).toMatchObject({ reason: 'pending', txHash: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
    expect(pending.headers['retry-after']).toBeUndefined();
    // Broadcast, not failed: the node still holds it; nothing was voided yet.
    expect(await chain.provider.getTransaction(details.txHash)).not.toBeNull();
    expect(await chain.provider.getTransactionReceipt(details.txHash)).toBeNull();
    expect((await t.http.get(`/api/v1/invoices/${id}`).set('X-Api-Key', seller.key)).body.status).toBe('open');

    await chain.provider.send('evm_setAutomine', [true]);
    await chain.mine();
    expect((await chain.provider.getTransactionReceipt(details.txHash))?.status).toBe(1);
    expect((await chain.gateway.getOnChainEscrow(terms.escrowKey)).state).toBe('voided');
    const retried = await t.http.post(`/api/v1/invoices/${id}/void`).set('X-Api-Key', seller.key).send({});
    expect(retried.status).toBe(200);
    expect(retried.body.status).toBe('void');
  });
});
