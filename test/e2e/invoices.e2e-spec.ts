import { createTestApp, TestApp } from '../support/app';
import { fundingTerms, fundOnChain, TestChain, USDC } from '../support/chain';
import { expectError, expectInvalidParam } from '../support/errors';
import { createKey, createOrg, TestOrg } from '../support/factories';
import { VerificationService } from '../../src/modules/verification/verification.service';

jest.setTimeout(60_000);

const CUSTOMER = { name: 'Ada Lovelace', email: 'ada@example.com' };

/** Invoices (docs/architecture.md §11): drafts, totals, PATCH, send/re-send/void, every refusal, numbering, idempotency, the page. */
describe('invoices', () => {
  let t: TestApp;
  let org: TestOrg;
  let other: TestOrg;
  let offeringId: string;

  const create = (body: object, key = org.key) => t.http.post('/api/v1/invoices').set('X-Api-Key', key).send(body);
  const patch = (id: string, body: object, key = org.key) => t.http.patch(`/api/v1/invoices/${id}`).set('X-Api-Key', key).send(body);
  const get = (id: string, key = org.key) => t.http.get(`/api/v1/invoices/${id}`).set('X-Api-Key', key);
  const action = (id: string, verb: 'send' | 'void', key = org.key, idem?: string) => {
    const req = t.http.post(`/api/v1/invoices/${id}/${verb}`).set('X-Api-Key', key);
    if (idem) req.set('Idempotency-Key', idem);
    return req.send({});
  };
  const draft = async (key = org.key, lines: object[] = [{ description: 'Consulting', unitAmount: '100.00' }]) => {
    const res = await create({ customer: CUSTOMER, lineItems: lines }, key);
    expect(res.status).toBe(200);
    return res.body as { id: string } & Record<string, unknown>;
  };
  const emailRows = async (invoiceId: string) =>
    (await t.dataSource.query('SELECT status FROM invoice_emails WHERE invoice_id = $1 ORDER BY created_at', [invoiceId])) as Array<{ status: string }>;

  beforeAll(async () => {
    t = await createTestApp();
    org = await createOrg(t.app);
    other = await createOrg(t.app);
    offeringId = (await t.http.post('/api/v1/offerings').set('X-Api-Key', org.key).send({ name: 'Logo design', amount: '250.00' })).body.id;
  });
  afterAll(() => t.close());

  it('a rejected organisation may not send invoices (403 kyb_rejected, no number used); reopening restores', async () => {
    const rejected = await createOrg(t.app);
    const invoice = await draft(rejected.key);
    await t.app.get(VerificationService).decide(rejected.organizationId, 'declined');
    expectError(await action(invoice.id, 'send', rejected.key), 403, 'kyb_rejected');
    expect((await get(invoice.id, rejected.key)).body).toMatchObject({ status: 'draft', number: null });
    await t.app.get(VerificationService).decide(rejected.organizationId, 'reopen');
    const sent = await action(invoice.id, 'send', rejected.key);
    expect(sent.status).toBe(200);
    expect(sent.body).toMatchObject({ status: 'open', number: 'INV-000001' });
  });

  it('creates a draft: lines priced from offerings or given, totals in exact six-decimal arithmetic', async () => {
    const res = await create({
      customer: CUSTOMER,
      lineItems: [
        { offeringId, quantity: 2 },
        { description: 'Hosting, per day', quantity: 3, unitAmount: '0.333333' },
        { description: 'Fee', unitAmount: '0.000002' },
      ],
      dueAt: '2030-01-31T00:00:00.000Z',
      memo: 'Thanks!',
      metadata: { po: '42' },
    });
    expect(res.status).toBe(200);
    const i = res.body;
    expect(Object.keys(i).sort()).toEqual(
      ['amount', 'checkoutSessionId', 'createdAt', 'currency', 'customer', 'dueAt', 'email', 'id', 'lineItems', 'memo', 'metadata', 'number', 'paidAt', 'payUrl', 'sentAt', 'status', 'updatedAt', 'voidedAt'].sort(),
    );
    expect(i).toMatchObject({
      status: 'draft',
      number: null,
      payUrl: null,
      sentAt: null,
      email: null,
      customer: CUSTOMER,
      currency: 'USDC',
      amount: '501.000001',
      dueAt: '2030-01-31T00:00:00.000Z',
      memo: 'Thanks!',
      metadata: { po: '42' },
      lineItems: [
        { description: 'Logo design', quantity: 2, unitAmount: '250.00', amount: '500.00', offeringId },
        { description: 'Hosting, per day', quantity: 3, unitAmount: '0.333333', amount: '0.999999', offeringId: null },
        { description: 'Fee', quantity: 1, unitAmount: '0.000002', amount: '0.000002', offeringId: null },
      ],
    });
    const rows = await t.dataSource.query('SELECT amount_units::text AS u FROM invoices WHERE id = $1', [i.id]);
    expect(rows[0].u).toBe('501000001');
    expect((await get(i.id)).body).toEqual(i);
  });

  it('refuses bad drafts, naming the field', async () => {
    expectInvalidParam(await create({ customer: CUSTOMER, lineItems: [] }), 'lineItems');
    expectInvalidParam(await create({ customer: CUSTOMER }), 'lineItems');
    expectInvalidParam(await create({ lineItems: [{ description: 'x', unitAmount: '1.00' }] }), 'customer');
    expectInvalidParam(await create({ customer: { name: 'A', email: 'nope' }, lineItems: [{ description: 'x', unitAmount: '1.00' }] }), 'customer.email');
    expectInvalidParam(await create({ customer: CUSTOMER, lineItems: [{ unitAmount: '1.00' }] }), 'lineItems.0.description');
    expectInvalidParam(await create({ customer: CUSTOMER, lineItems: [{ description: 'x' }] }), 'lineItems.0.unitAmount');
    expectInvalidParam(await create({ customer: CUSTOMER, lineItems: [{ description: 'x', unitAmount: '1.0000001' }] }), 'lineItems.0.unitAmount');
    expectInvalidParam(await create({ customer: CUSTOMER, lineItems: [{ description: 'x', unitAmount: '0' }] }), 'lineItems.0.unitAmount');
    expectInvalidParam(await create({ customer: CUSTOMER, lineItems: [{ description: 'x', unitAmount: '1.00', quantity: 0 }] }), 'lineItems.0.quantity');
    expectInvalidParam(await create({ customer: CUSTOMER, lineItems: [{ description: 'ok', unitAmount: '1.00' }, { offeringId, unitAmount: '1.00' }] }), 'lineItems.1.unitAmount');
    expectInvalidParam(await create({ customer: CUSTOMER, lineItems: [{ description: 'x', unitAmount: '600000', quantity: 2 }] }), 'lineItems');
    const foreign = (await t.http.post('/api/v1/offerings').set('X-Api-Key', other.key).send({ name: 'Theirs', amount: '1.00' })).body.id;
    expectInvalidParam(await create({ customer: CUSTOMER, lineItems: [{ offeringId: foreign }] }), 'lineItems.0.offeringId');
    const archived = (await t.http.post('/api/v1/offerings').set('X-Api-Key', org.key).send({ name: 'Old', amount: '1.00', active: false })).body.id;
    expectInvalidParam(await create({ customer: CUSTOMER, lineItems: [{ offeringId: archived }] }), 'lineItems.0.offeringId');
  });

  it('PATCH edits a draft with merge semantics and re-prices replaced lines', async () => {
    const i = (await create({ customer: CUSTOMER, lineItems: [{ description: 'A', unitAmount: '1.50' }], memo: 'm', dueAt: '2030-01-01T00:00:00.000Z', metadata: { a: 1, b: 2 } })).body;
    const r1 = await patch(i.id, { customer: { name: 'Grace Hopper' } });
    expect(r1.status).toBe(200);
    expect(r1.body).toMatchObject({ customer: { name: 'Grace Hopper', email: 'ada@example.com' }, memo: 'm', dueAt: '2030-01-01T00:00:00.000Z', amount: '1.50' });
    const r2 = await patch(i.id, { memo: null, dueAt: null, metadata: { a: null, c: 3 }, lineItems: [{ description: 'B', quantity: 4, unitAmount: '0.25' }, { offeringId }] });
    expect(r2.body).toMatchObject({ memo: null, dueAt: null, metadata: { b: 2, c: 3 }, amount: '251.00' });
    expect(r2.body.lineItems).toHaveLength(2);
    expectInvalidParam(await patch(i.id, { customer: { email: null } }), 'customer.email');
    expectInvalidParam(await patch(i.id, { lineItems: null }), 'lineItems');
    expectInvalidParam(await patch(i.id, { status: 'paid' }), 'status');
    expect((await get(i.id)).body).toMatchObject({ status: 'draft', amount: '251.00' });
  });

  it('send finalises (number, payUrl, sentAt) without SMTP and says it was not emailed; re-send keeps the number; edit after send → 409', async () => {
    const fresh = await createOrg(t.app);
    const i = await draft(fresh.key);
    const sent = await action(i.id, 'send', fresh.key);
    expect(sent.status).toBe(200);
    expect(sent.body).toMatchObject({
      status: 'open',
      number: 'INV-000001',
      payUrl: `https://pay.test/invoices/${i.id}`,
      email: { status: 'skipped', reason: 'smtp_not_configured', to: 'ada@example.com', attempts: 0, sentAt: null },
    });
    expect(Date.parse(sent.body.sentAt)).toBeGreaterThan(0);
    const again = await action(i.id, 'send', fresh.key);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ status: 'open', number: 'INV-000001', sentAt: sent.body.sentAt });
    expect(await emailRows(i.id)).toEqual([{ status: 'skipped' }, { status: 'skipped' }]);

    const edit = await patch(i.id, { memo: 'late change' }, fresh.key);
    expect(expectError(edit, 409, 'invalid_request')).toMatchObject({ reason: 'invalid_state', status: 'open', allowed: ['draft'] });
    expect((await get(i.id, fresh.key)).body.memo).toBeNull();
    const second = await draft(fresh.key);
    expect((await action(second.id, 'send', fresh.key)).body.number).toBe('INV-000002');
  });

  it('void: from draft and from open; then send, edit and void are refused (409)', async () => {
    const d = await draft();
    const voided = await action(d.id, 'void');
    expect(voided.status).toBe(200);
    expect(voided.body).toMatchObject({ status: 'void', number: null });
    expect(Date.parse(voided.body.voidedAt)).toBeGreaterThan(0);
    expect(expectError(await action(d.id, 'send'), 409, 'invalid_request')).toMatchObject({ status: 'void', allowed: ['draft', 'open'] });
    expect(expectError(await action(d.id, 'void'), 409, 'invalid_request')).toMatchObject({ status: 'void', allowed: ['draft', 'open'] });
    expect(expectError(await patch(d.id, { memo: 'x' }), 409, 'invalid_request')).toMatchObject({ status: 'void', allowed: ['draft'] });

    const o = await draft();
    await action(o.id, 'send');
    const v2 = await action(o.id, 'void');
    expect(v2.body).toMatchObject({ status: 'void', number: expect.stringMatching(/^INV-\d{6}$/) });
    expectError(await action(o.id, 'send'), 409, 'invalid_request');
  });

  it('numbers 20 concurrent sends of one organisation INV-000001…INV-000020: no gap, no duplicate', async () => {
    const fresh = await createOrg(t.app);
    const drafts = await Promise.all(Array.from({ length: 20 }, () => draft(fresh.key)));
    const results = await Promise.all(drafts.map((d) => action(d.id, 'send', fresh.key)));
    expect(results.map((r) => r.status)).toEqual(Array(20).fill(200));
    const numbers = results.map((r) => r.body.number as string).sort();
    expect(numbers).toEqual(Array.from({ length: 20 }, (_, n) => `INV-${String(n + 1).padStart(6, '0')}`));
    // Twin sends of one draft: one finalisation (one number), the twin is a re-send.
    const twin = await draft(fresh.key);
    const both = await Promise.all([action(twin.id, 'send', fresh.key), action(twin.id, 'send', fresh.key)]);
    expect(both.map((r) => r.body.number)).toEqual(['INV-000021', 'INV-000021']);
    const rows = await t.dataSource.query(`SELECT count(*)::int AS n, count(DISTINCT number)::int AS d FROM invoices WHERE organization_id = $1 AND number IS NOT NULL`, [fresh.organizationId]);
    expect(rows[0]).toEqual({ n: 21, d: 21 });
  });

  it('a refused send consumes no number (rollback gives it back)', async () => {
    const fresh = await createOrg(t.app);
    const a = await draft(fresh.key);
    await action(a.id, 'void', fresh.key);
    expectError(await action(a.id, 'send', fresh.key), 409, 'invalid_request');
    const b = await draft(fresh.key);
    expect((await action(b.id, 'send', fresh.key)).body.number).toBe('INV-000001');
  });

  it('replays create, send and void under an Idempotency-Key', async () => {
    const fresh = await createOrg(t.app);
    const body = { customer: CUSTOMER, lineItems: [{ description: 'Idem', unitAmount: '2.00' }] };
    const c1 = await t.http.post('/api/v1/invoices').set('X-Api-Key', fresh.key).set('Idempotency-Key', 'inv-create-1').send(body);
    const c2 = await t.http.post('/api/v1/invoices').set('X-Api-Key', fresh.key).set('Idempotency-Key', 'inv-create-1').send(body);
    expect(c2.headers['idempotent-replayed']).toBe('true');
    expect(c2.body).toEqual(c1.body);
    expect((await t.dataSource.query('SELECT count(*)::int AS n FROM invoices WHERE organization_id = $1', [fresh.organizationId]))[0].n).toBe(1);
    expectError(await t.http.post('/api/v1/invoices').set('X-Api-Key', fresh.key).set('Idempotency-Key', 'inv-create-1').send({ ...body, memo: 'other' }), 422, 'idempotency_conflict');

    const s1 = await action(c1.body.id, 'send', fresh.key, 'inv-send-1');
    const s2 = await action(c1.body.id, 'send', fresh.key, 'inv-send-1');
    expect(s2.headers['idempotent-replayed']).toBe('true');
    expect(s2.body).toEqual(s1.body);
    expect(await emailRows(c1.body.id)).toHaveLength(1);

    const v1 = await action(c1.body.id, 'void', fresh.key, 'inv-void-1');
    const v2 = await action(c1.body.id, 'void', fresh.key, 'inv-void-1');
    expect(v1.status).toBe(200);
    expect(v2.headers['idempotent-replayed']).toBe('true');
    expect(v2.body).toEqual(v1.body);
  });

  it('scopes and isolation: another organisation gets 404; read keys cannot write', async () => {
    const i = await draft();
    for (const res of [await get(i.id, other.key), await patch(i.id, { memo: 'x' }, other.key), await action(i.id, 'send', other.key), await action(i.id, 'void', other.key)]) {
      expectError(res, 404, 'not_found');
    }
    expect((await get(i.id)).body.status).toBe('draft');
    const readOnly = await createKey(t.app, org.organizationId, ['invoices:read']);
    expect((await get(i.id, readOnly)).status).toBe(200);
    expect(expectError(await action(i.id, 'send', readOnly), 403, 'missing_scope')?.required).toEqual(['invoices:write']);
    expectError(await create({ customer: CUSTOMER, lineItems: [{ description: 'x', unitAmount: '1.00' }] }, readOnly), 403, 'missing_scope');
    expectError(await t.http.get('/api/v1/invoices').set('X-Api-Key', await createKey(t.app, org.organizationId, ['offerings:read'])), 403, 'missing_scope');
  });

  it('lists newest first with a status filter', async () => {
    const fresh = await createOrg(t.app);
    const a = await draft(fresh.key);
    const b = await draft(fresh.key);
    await action(b.id, 'send', fresh.key);
    const c = await draft(fresh.key);
    const all = await t.http.get('/api/v1/invoices?limit=2').set('X-Api-Key', fresh.key);
    expect(all.body.data.map((x: { id: string }) => x.id)).toEqual([c.id, b.id]);
    expect(all.body.hasMore).toBe(true);
    const rest = await t.http.get(`/api/v1/invoices?starting_after=${all.body.nextCursor}`).set('X-Api-Key', fresh.key);
    expect(rest.body.data.map((x: { id: string }) => x.id)).toEqual([a.id]);
    const open = await t.http.get('/api/v1/invoices?status=open').set('X-Api-Key', fresh.key);
    expect(open.body.data.map((x: { id: string; email: { status: string } }) => [x.id, x.email.status])).toEqual([[b.id, 'skipped']]);
    expectInvalidParam(await t.http.get('/api/v1/invoices?status=late').set('X-Api-Key', fresh.key), 'status');
  });

  describe('the invoice page', () => {
    const page = (id: string) => t.http.get(`/invoices/${id}`);
    const checkoutIdOf = (html: string) => /data-checkout-id="([0-9a-f-]{36})"/.exec(html)?.[1];

    it('is 404 for drafts and unknown ids; mints one checkout for an open invoice and reuses it', async () => {
      const d = await draft(org.key, [{ description: 'Page test', quantity: 2, unitAmount: '1.25' }]);
      expect((await page(d.id)).status).toBe(404);
      expect((await page('not-an-id')).status).toBe(404);
      await action(d.id, 'send');
      const first = await page(d.id);
      expect(first.status).toBe(200);
      expect(first.headers['content-security-policy']).toContain("default-src 'none'");
      expect(first.text).toContain('2.50 USDC');
      expect(first.text).toContain('data-state="pay"');
      const checkoutId = checkoutIdOf(first.text)!;
      const session = await t.http.get(`/api/v1/checkout-sessions/${checkoutId}`).set('X-Api-Key', org.key);
      expect(session.body).toMatchObject({ status: 'open', amount: '2.50', invoiceId: d.id, offeringId: null });
      const reloads = await Promise.all([page(d.id), page(d.id), page(d.id)]);
      expect(reloads.map((r) => checkoutIdOf(r.text))).toEqual([checkoutId, checkoutId, checkoutId]);
      expect((await get(d.id)).body.checkoutSessionId).toBe(checkoutId);
      expect((await t.dataSource.query('SELECT count(*)::int AS n FROM checkout_sessions WHERE invoice_id = $1', [d.id]))[0].n).toBe(1);
    });

    it('mints a new checkout only after the last one is past its deadline by the clock margin', async () => {
      const d = await draft();
      await action(d.id, 'send');
      const firstId = checkoutIdOf((await page(d.id)).text)!;
      await t.dataSource.query(`UPDATE checkout_sessions SET expires_at = now() - interval '30 seconds' WHERE id = $1`, [firstId]);
      const closing = await page(d.id);
      expect(closing.text).toContain('data-state="closing"');
      await t.dataSource.query(`UPDATE checkout_sessions SET expires_at = now() - interval '1 hour' WHERE id = $1`, [firstId]);
      const next = await page(d.id);
      const secondId = checkoutIdOf(next.text)!;
      expect(next.text).toContain('data-state="pay"');
      expect(secondId).not.toBe(firstId);
      const rows = await t.dataSource.query('SELECT id, status FROM checkout_sessions WHERE invoice_id = $1 ORDER BY created_at', [d.id]);
      expect(rows).toEqual([{ id: firstId, status: 'expired' }, { id: secondId, status: 'open' }]);
    });

    it('void ends the open checkout: its escrow id is burnt on chain (terms a buyer holds can no longer fund), its funding terms are refused and the page says void', async () => {
      const chain = new TestChain();
      try {
        const seller = await createOrg(t.app, { payoutAddress: (await chain.wallet()).address });
        const d = await draft(seller.key);
        await action(d.id, 'send', seller.key);
        const checkoutId = checkoutIdOf((await page(d.id)).text)!;
        const buyer = await chain.wallet({ usdc: 1_000n * USDC });
        const { funding, terms } = await fundingTerms(t, checkoutId, buyer.address);
        expect((await chain.gateway.getOnChainEscrow(terms.escrowKey)).state).toBe('none');
        expect((await action(d.id, 'void', seller.key)).body.status).toBe('void');
        expect((await chain.gateway.getOnChainEscrow(terms.escrowKey)).state).toBe('voided');
        await expect(chain.fundWithAuthorization(buyer, terms, funding.termsSignature)).rejects.toThrow();
        expect((await action(d.id, 'void', seller.key)).status).toBe(409);
      } finally {
        chain.close();
      }
    });

    it('void refuses an invoice whose checkout is funded on chain before the indexer has seen it', async () => {
      const chain = new TestChain();
      try {
        const seller = await createOrg(t.app, { payoutAddress: (await chain.wallet()).address });
        const d = await draft(seller.key);
        await action(d.id, 'send', seller.key);
        const checkoutId = checkoutIdOf((await page(d.id)).text)!;
        const buyer = await chain.wallet({ usdc: 1_000n * USDC });
        await fundOnChain(t, chain, checkoutId, buyer);
        const refused = await action(d.id, 'void', seller.key);
        expect(expectError(refused, 409, 'invalid_request')).toMatchObject({ reason: 'checkout_funded', checkoutSessionId: checkoutId });
        expect((await get(d.id, seller.key)).body.status).toBe('open');
      } finally {
        chain.close();
      }
    });

    it('void after send: the checkout is expired and the page says void', async () => {
      const d = await draft();
      await action(d.id, 'send');
      const checkoutId = checkoutIdOf((await page(d.id)).text)!;
      expect((await t.http.get(`/api/v1/checkout-sessions/${checkoutId}/funding-terms`)).status).not.toBe(404);
      expect((await action(d.id, 'void')).body.status).toBe('void');
      expect((await t.http.get(`/api/v1/checkout-sessions/${checkoutId}`).set('X-Api-Key', org.key)).body.status).toBe('expired');
      expectError(await t.http.get(`/api/v1/checkout-sessions/${checkoutId}/funding-terms`), 409, 'invalid_request');
      const after = await page(d.id);
      expect(after.text).toContain('data-state="void"');
      expect(after.text).not.toContain('data-checkout-id');
    });
  });

  it('is in the OpenAPI document', async () => {
    const doc = (await t.http.get('/docs-json')).body;
    expect(Object.keys(doc.paths['/api/v1/invoices']).sort()).toEqual(['get', 'post']);
    expect(Object.keys(doc.paths['/api/v1/invoices/{id}']).sort()).toEqual(['get', 'patch']);
    expect(Object.keys(doc.paths['/api/v1/invoices/{id}/send'])).toEqual(['post']);
    expect(Object.keys(doc.paths['/api/v1/invoices/{id}/void'])).toEqual(['post']);
    expect(doc.paths['/api/v1/invoices/{id}/send'].post.parameters.map((p: { name: string }) => p.name)).toContain('Idempotency-Key');
    expect(doc.components.schemas.InvoiceDto.properties.number.example).toBe('INV-000042');
  });
});
