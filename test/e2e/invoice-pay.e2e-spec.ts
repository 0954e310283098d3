import { escrowKeyParts } from '@lib/chain';
import { createTestApp, TestApp } from '../support/app';
import { checkoutEvents, createParties, fundingTerms, fundOnChain, getCheckout, indexUntilStatus, Party, TestChain } from '../support/chain';
import { expectError } from '../support/errors';

jest.setTimeout(90_000);

/**
 * Paying an invoice on the run's real anvil (docs/architecture.md §11): invoice → its page mints a
 * checkout → funded (indexer) → released (buyer's tx reported) → invoice paid; void refused while
 * funded; after a refund the invoice is payable again by a new checkout; events carry invoiceId.
 */
describe('paying an invoice through escrow (API + anvil + indexer)', () => {
  let t: TestApp;
  let chain: TestChain;

  beforeAll(async () => {
    t = await createTestApp();
    chain = new TestChain();
  });
  afterAll(async () => {
    chain?.close();
    await t?.close();
  });

  const getInvoice = (seller: Party, id: string) => t.http.get(`/api/v1/invoices/${id}`).set('X-Api-Key', seller.org.key);
  const pageCheckoutId = async (invoiceId: string) => {
    const res = await t.http.get(`/invoices/${invoiceId}`);
    expect(res.status).toBe(200);
    return { html: res.text, checkoutId: /data-checkout-id="([0-9a-f-]{36})"/.exec(res.text)?.[1] };
  };
  async function sentInvoice(seller: Party) {
    const created = await t.http
      .post('/api/v1/invoices')
      .set('X-Api-Key', seller.org.key)
      .send({
        customer: { name: 'Buyer Co', email: 'ap@buyer.test' },
        lineItems: [
          { description: 'Design sprint', quantity: 2, unitAmount: '10.25' },
          { description: 'Hosting', quantity: 3, unitAmount: '0.333333' },
        ],
      });
    expect(created.status).toBe(200);
    const sent = await t.http.post(`/api/v1/invoices/${created.body.id}/send`).set('X-Api-Key', seller.org.key).send({});
    expect(sent.body.status).toBe('open');
    return sent.body as { id: string; amount: string; number: string };
  }
  /** A sent invoice whose page-minted checkout the buyer funded on chain (indexed): its ids and escrow key. */
  async function fundedInvoice(seller: Party, buyer: Party) {
    const invoice = await sentInvoice(seller);
    const checkoutId = (await pageCheckoutId(invoice.id)).checkoutId!;
    await fundOnChain(t, chain, checkoutId, buyer.wallet);
    const escrowId = (await indexUntilStatus(t, seller.org, checkoutId, 'funded')).escrowId as string;
    const escrowKey = (await t.dataSource.query('SELECT escrow_key FROM escrows WHERE id = $1', [escrowId]))[0].escrow_key as string;
    return { invoice, checkoutId, escrowId, escrowKey };
  }
  const escrowAction = (party: Party, escrowId: string, action: string, txHash: string) =>
    t.http
      .post(`/api/v1/escrows/${escrowId}/${action}`)
      .set('X-Api-Key', party.org.key)
      .set('Idempotency-Key', `${action}-${txHash}`)
      .send({ txHash, confirm: true });

  it('invoice → checkout → funded → released → invoice paid; void refused while funded; events carry invoiceId', async () => {
    const { seller, buyer } = await createParties(t, chain);
    const invoice = await sentInvoice(seller);
    expect(invoice.amount).toBe('21.499999');

    const { checkoutId } = await pageCheckoutId(invoice.id);
    expect(checkoutId).toBeDefined();
    const checkout = await getCheckout(t, seller.org, checkoutId!);
    expect(checkout).toMatchObject({ status: 'open', amount: '21.499999', invoiceId: invoice.id, orderId: invoice.number });

    await fundOnChain(t, chain, checkoutId!, buyer.wallet);
    const funded = await indexUntilStatus(t, seller.org, checkoutId!, 'funded');
    const escrowId = funded.escrowId as string;
    const whileFunded = (await getInvoice(seller, invoice.id)).body;
    expect(whileFunded).toMatchObject({ status: 'open', checkoutSessionId: checkoutId, paidAt: null });
    const page = await pageCheckoutId(invoice.id);
    expect(page.html).toContain('data-state="in_escrow"');
    expect(page.checkoutId).toBe(checkoutId);

    const voidRes = await t.http.post(`/api/v1/invoices/${invoice.id}/void`).set('X-Api-Key', seller.org.key).send({});
    expect(expectError(voidRes, 409, 'invalid_request')).toMatchObject({ reason: 'checkout_funded', checkoutSessionId: checkoutId, checkoutStatus: 'funded' });
    expect((await getInvoice(seller, invoice.id)).body.status).toBe('open');

    const escrowKey = (await t.dataSource.query('SELECT escrow_key FROM escrows WHERE id = $1', [escrowId]))[0].escrow_key as string;
    const releaseTx = await chain.act(buyer.wallet, 'release', escrowKey);
    const released = await escrowAction(buyer, escrowId, 'release', releaseTx);
    expect(released.status).toBe(200);
    expect(released.body.status).toBe('released');

    const paid = (await getInvoice(seller, invoice.id)).body;
    expect(paid).toMatchObject({ status: 'paid', checkoutSessionId: checkoutId });
    expect(Date.parse(paid.paidAt)).toBeGreaterThan(0);
    expect((await pageCheckoutId(invoice.id)).html).toContain('data-state="paid"');
    expectError(await t.http.post(`/api/v1/invoices/${invoice.id}/send`).set('X-Api-Key', seller.org.key).send({}), 409, 'invalid_request');
    expectError(await t.http.post(`/api/v1/invoices/${invoice.id}/void`).set('X-Api-Key', seller.org.key).send({}), 409, 'invalid_request');

    const events = await checkoutEvents(t, checkoutId!);
    expect(events.map((e) => e.type)).toEqual(['checkout.funded', 'checkout.released', 'checkout.paid']);
    for (const e of events) expect(e.object.invoiceId).toBe(invoice.id);
  });

  it("after a buyer's cancel the invoice's checkout is open again under a new escrow id, and void burns that id on chain", async () => {
    const { seller, buyer } = await createParties(t, chain);
    const { invoice, checkoutId, escrowId, escrowKey: firstKey } = await fundedInvoice(seller, buyer);
    const cancelTx = await chain.act(buyer.wallet, 'cancel', firstKey);
    expect((await escrowAction(buyer, escrowId, 'cancel', cancelTx)).body.status).toBe('cancelled');

    const page = await pageCheckoutId(invoice.id);
    expect(page.checkoutId).toBe(checkoutId); // the same checkout, payable again
    expect(page.html).toContain('data-state="pay"');
    expect((await getInvoice(seller, invoice.id)).body.status).toBe('open');
    const nextKey = (await fundingTerms(t, checkoutId, buyer.wallet.address)).terms.escrowKey;
    expect(escrowKeyParts(nextKey)).toEqual({ id: checkoutId, attempt: 1 });

    const voided = await t.http.post(`/api/v1/invoices/${invoice.id}/void`).set('X-Api-Key', seller.org.key).send({});
    expect(voided.body.status).toBe('void');
    expect((await chain.gateway.getOnChainEscrow(nextKey)).state).toBe('voided');
    expect((await chain.gateway.getOnChainEscrow(firstKey)).state).toBe('cancelled');
  });

  it('after a refund the invoice is payable again by a new checkout; the refunded one cannot be funded again', async () => {
    const { seller, buyer } = await createParties(t, chain);
    const { invoice, checkoutId: first, escrowId, escrowKey } = await fundedInvoice(seller, buyer);

    // A second funding attempt while one is funded: no other checkout exists to fund, and the funded one's terms are refused.
    expect((await pageCheckoutId(invoice.id)).checkoutId).toBe(first);
    expectError(await t.http.get(`/api/v1/checkout-sessions/${first}/funding-terms`), 409, 'invalid_request');

    const declineTx = await chain.act(seller.wallet, 'decline', escrowKey);
    const declined = await escrowAction(seller, escrowId, 'decline', declineTx);
    expect(declined.body.status).toBe('refunded');
    expect((await getInvoice(seller, invoice.id)).body.status).toBe('open');

    const again = await pageCheckoutId(invoice.id);
    expect(again.html).toContain('data-state="pay"');
    expect(again.checkoutId).not.toBe(first);
    const second = await getCheckout(t, seller.org, again.checkoutId!);
    expect(second).toMatchObject({ status: 'open', invoiceId: invoice.id, amount: invoice.amount });
    expect((await fundingTerms(t, again.checkoutId!, buyer.wallet.address)).funding.amount).toBe(invoice.amount);
    expect((await getInvoice(seller, invoice.id)).body.checkoutSessionId).toBe(again.checkoutId);
  });
});
