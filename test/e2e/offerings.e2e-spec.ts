import type { AddressInfo } from 'node:net';
import { NotFoundError, InvalidRequestError, PermissionError, Pcp } from '@pcp/sdk';
import { createTestApp, TestApp } from '../support/app';
import { countSessions, expectError, expectInvalidParam } from '../support/errors';
import { createKey, createOrg, TestOrg } from '../support/factories';

jest.setTimeout(30_000);

/** Offerings (docs/architecture.md §11): CRUD, JSON-merge PATCH, scopes, isolation, and selling one through checkout. */
describe('offerings', () => {
  let t: TestApp;
  let org: TestOrg;
  let other: TestOrg;

  const create = (body: object, key = org.key) => t.http.post('/api/v1/offerings').set('X-Api-Key', key).send(body);
  const patch = (id: string, body: object, key = org.key) => t.http.patch(`/api/v1/offerings/${id}`).set('X-Api-Key', key).send(body);
  const get = (id: string, key = org.key) => t.http.get(`/api/v1/offerings/${id}`).set('X-Api-Key', key);
  const checkout = (body: object, key = org.key) => t.http.post('/api/v1/checkout-sessions').set('X-Api-Key', key).send(body);

  beforeAll(async () => {
    t = await createTestApp();
    org = await createOrg(t.app);
    other = await createOrg(t.app);
  });
  afterAll(() => t.close());

  it('creates with defaults and reads it back with exactly the documented fields', async () => {
    const res = await create({ name: 'Logo design', amount: '250.5' });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(
      ['active', 'amount', 'createdAt', 'currency', 'description', 'escrowTemplateId', 'id', 'metadata', 'name', 'updatedAt'].sort(),
    );
    expect(res.body).toMatchObject({ name: 'Logo design', amount: '250.50', currency: 'USDC', description: null, escrowTemplateId: 'custom', active: true, metadata: null });
    const read = await get(res.body.id);
    expect(read.status).toBe(200);
    expect(read.body).toEqual(res.body);
  });

  it('PATCH merges: absent keeps, null clears optional fields, metadata merges by key, required fields refuse null', async () => {
    const o = (await create({ name: 'Mug', description: 'Blue', amount: '12.00', escrowTemplateId: 'physical', metadata: { sku: 'M1', color: 'blue' } })).body;
    const a = await patch(o.id, { amount: '13.000001' });
    expect(a.status).toBe(200);
    expect(a.body).toMatchObject({ name: 'Mug', description: 'Blue', amount: '13.000001', escrowTemplateId: 'physical', active: true, metadata: { sku: 'M1', color: 'blue' } });
    expect(Date.parse(a.body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(o.updatedAt));

    const b = await patch(o.id, { description: null, metadata: { color: null, size: 'L' } });
    expect(b.status).toBe(200);
    expect(b.body.description).toBeNull();
    expect(b.body.metadata).toEqual({ sku: 'M1', size: 'L' });
    expect(b.body.amount).toBe('13.000001');

    const c = await patch(o.id, { metadata: null });
    expect(c.body.metadata).toBeNull();

    for (const field of ['name', 'amount', 'active', 'escrowTemplateId']) {
      expectInvalidParam(await patch(o.id, { [field]: null }), field);
    }
    expectInvalidParam(await patch(o.id, { unknownField: 1 }), 'unknownField');
    const empty = await patch(o.id, {});
    expect(empty.status).toBe(200);
    expect(empty.body).toMatchObject({ name: 'Mug', description: null, amount: '13.000001', metadata: null });
  });

  it('PATCH accepts application/merge-patch+json (RFC 7396) and replays under an Idempotency-Key', async () => {
    const o = (await create({ name: 'Sticker', amount: '1.00' })).body;
    const first = await t.http
      .patch(`/api/v1/offerings/${o.id}`)
      .set('X-Api-Key', org.key)
      .set('Content-Type', 'application/merge-patch+json')
      .set('Idempotency-Key', `patch-${o.id}`)
      .send(JSON.stringify({ name: 'Sticker pack' }));
    expect(first.status).toBe(200);
    expect(first.body.name).toBe('Sticker pack');
    expect(first.headers['idempotent-replayed']).toBe('false');
    await patch(o.id, { name: 'Changed since' });
    const replay = await t.http.patch(`/api/v1/offerings/${o.id}`).set('X-Api-Key', org.key).set('Idempotency-Key', `patch-${o.id}`).send({ name: 'Sticker pack' });
    expect(replay.status).toBe(200);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body).toEqual(first.body);
    const conflict = await t.http.patch(`/api/v1/offerings/${o.id}`).set('X-Api-Key', org.key).set('Idempotency-Key', `patch-${o.id}`).send({ name: 'Other' });
    expectError(conflict, 422, 'idempotency_conflict');
    expect((await get(o.id)).body.name).toBe('Changed since');
  });

  it('refuses invalid amounts and fields', async () => {
    for (const amount of ['0', '0.00', '-1', '1.1234567', '1e3', '01.5', 12, '']) expectInvalidParam(await create({ name: 'X', amount }), 'amount');
    expectInvalidParam(await create({ name: 'X', amount: '1000000.000001' }), 'amount');
    expectInvalidParam(await create({ name: '', amount: '1.00' }), 'name');
    expectInvalidParam(await create({ amount: '1.00' }), 'name');
    expectInvalidParam(await create({ name: 'X', amount: '1.00', escrowTemplateId: 'barter' }), 'escrowTemplateId');
    const o = (await create({ name: 'Y', amount: '2.00' })).body;
    expectInvalidParam(await patch(o.id, { amount: '0' }), 'amount');
    expectInvalidParam(await patch(o.id, { amount: '2000000' }), 'amount');
    expect((await get(o.id)).body.amount).toBe('2.00');
  });

  it('needs offerings scopes: read for GET, write for POST/PATCH', async () => {
    const o = (await create({ name: 'Scoped', amount: '3.00' })).body;
    const readOnly = await createKey(t.app, org.organizationId, ['offerings:read']);
    const none = await createKey(t.app, org.organizationId, ['checkout:write']);
    expect((await get(o.id, readOnly)).status).toBe(200);
    expect((await t.http.get('/api/v1/offerings').set('X-Api-Key', readOnly)).status).toBe(200);
    expect(expectError(await create({ name: 'N', amount: '1.00' }, readOnly), 403, 'missing_scope')?.required).toEqual(['offerings:write']);
    expectError(await patch(o.id, { name: 'N' }, readOnly), 403, 'missing_scope');
    expectError(await get(o.id, none), 403, 'missing_scope');
    const star = await createKey(t.app, org.organizationId, ['offerings:*']);
    expect((await patch(o.id, { name: 'Star' }, star)).status).toBe(200);
  });

  it("another organisation's offering is 404 everywhere, and 400 offeringId at checkout", async () => {
    const o = (await create({ name: 'Private', amount: '5.00' })).body;
    expectError(await get(o.id, other.key), 404, 'not_found');
    expectError(await patch(o.id, { name: 'stolen' }, other.key), 404, 'not_found');
    expectError(await get('not-a-uuid'), 404, 'not_found');
    expect((await get(o.id)).body.name).toBe('Private');
    const res = await checkout({ amount: '5.00', description: 'x', offeringId: o.id }, other.key);
    expectInvalidParam(res, 'offeringId');
    expect(res.body.details.param).toBe('offeringId');
  });

  it('lists newest first with the active filter and cursors', async () => {
    const fresh = await createOrg(t.app);
    const ids: string[] = [];
    for (let n = 0; n < 5; n++) ids.push((await create({ name: `O${n}`, amount: '1.00', active: n % 2 === 0 }, fresh.key)).body.id);
    const all = await t.http.get('/api/v1/offerings?limit=2').set('X-Api-Key', fresh.key);
    expect(all.body.data.map((o: { id: string }) => o.id)).toEqual([ids[4], ids[3]]);
    expect(all.body.hasMore).toBe(true);
    const next = await t.http.get(`/api/v1/offerings?limit=2&starting_after=${all.body.nextCursor}`).set('X-Api-Key', fresh.key);
    expect(next.body.data.map((o: { id: string }) => o.id)).toEqual([ids[2], ids[1]]);
    const active = await t.http.get('/api/v1/offerings?active=true').set('X-Api-Key', fresh.key);
    expect(active.body.data.map((o: { id: string }) => o.id)).toEqual([ids[4], ids[2], ids[0]]);
    const archived = await t.http.get('/api/v1/offerings?active=false').set('X-Api-Key', fresh.key);
    expect(archived.body.data.map((o: { id: string }) => o.id)).toEqual([ids[3], ids[1]]);
    expectInvalidParam(await t.http.get('/api/v1/offerings?active=maybe').set('X-Api-Key', fresh.key), 'active');
  });

  describe('checkout from an offering', () => {
    it('records offeringId and quantity, takes the template, and needs amount = price × quantity', async () => {
      const o = (await create({ name: 'Lesson', amount: '0.333333', escrowTemplateId: 'digital' })).body;
      const ok = await checkout({ amount: '0.999999', description: 'Three lessons', offeringId: o.id, quantity: 3 });
      expect(ok.status).toBe(200);
      expect(ok.body).toMatchObject({ amount: '0.999999', offeringId: o.id, quantity: 3, escrowTemplateId: 'digital', invoiceId: null });
      const one = await checkout({ amount: '0.333333', description: 'One lesson', offeringId: o.id });
      expect(one.body).toMatchObject({ offeringId: o.id, quantity: 1 });
      const before = await countSessions(t.dataSource, org.organizationId);
      const wrong = await checkout({ amount: '1.00', description: 'x', offeringId: o.id, quantity: 3 });
      expectInvalidParam(wrong, 'amount');
      expect(wrong.body.details).toMatchObject({ param: 'amount', expected: '0.999999' });
      expectInvalidParam(await checkout({ amount: '1.00', description: 'x', quantity: 2 }), 'quantity');
      expectInvalidParam(await checkout({ amount: '0.333333', description: 'x', offeringId: o.id, quantity: 101 }), 'quantity');
      expectInvalidParam(await checkout({ amount: '0.333333', description: 'x', offeringId: o.id, quantity: 0 }), 'quantity');
      expectInvalidParam(await checkout({ amount: '1.00', description: 'x', offeringId: '0193a5c2-7d4e-7b3a-9f10-2b8c1d4e5f60' }), 'offeringId');
      expect(await countSessions(t.dataSource, org.organizationId)).toBe(before);
      const plain = await checkout({ amount: '1.00', description: 'free-form' });
      expect(plain.body).toMatchObject({ offeringId: null, quantity: null });
    });

    it('refuses an archived offering, and a price change binds later checkouts only', async () => {
      const o = (await create({ name: 'Seat', amount: '10.00' })).body;
      const early = (await checkout({ amount: '10.00', description: 'Seat', offeringId: o.id })).body;
      await patch(o.id, { amount: '12.00' });
      expectInvalidParam(await checkout({ amount: '10.00', description: 'Seat', offeringId: o.id }), 'amount');
      expect((await checkout({ amount: '12.00', description: 'Seat', offeringId: o.id })).status).toBe(200);
      expect((await t.http.get(`/api/v1/checkout-sessions/${early.id}`).set('X-Api-Key', org.key)).body.amount).toBe('10.00');
      await patch(o.id, { active: false });
      const res = await checkout({ amount: '12.00', description: 'Seat', offeringId: o.id });
      expectInvalidParam(res, 'offeringId');
      expect(res.body.details.reason).toBe('inactive_offering');
      await patch(o.id, { active: true });
      expect((await checkout({ amount: '12.00', description: 'Seat', offeringId: o.id })).status).toBe(200);
    });
  });

  it('through the SDK (packages/sdk): create, merge-patch, the active filter over list(), and typed errors', async () => {
    await t.app.listen(0, '127.0.0.1');
    const baseUrl = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}`;
    const fresh = await createOrg(t.app);
    const pcp = new Pcp({ baseUrl, credentials: { apiKey: fresh.key } });
    const made = [];
    for (const [n, active] of [[0, true], [1, false], [2, true]] as const) {
      made.push(await pcp.POST('/api/v1/offerings', { body: { name: `SDK ${n}`, amount: `${n + 1}.5`, active, metadata: { n: String(n) } } }));
    }
    expect(made.map((o) => o.amount)).toEqual(['1.50', '2.50', '3.50']);
    const patched = await pcp.PATCH('/api/v1/offerings/{id}', { params: { path: { id: made[0].id } }, body: { description: 'renamed', metadata: { n: null, k: 'v' } } });
    expect(patched).toMatchObject({ name: 'SDK 0', description: 'renamed', metadata: { k: 'v' } });
    expect(await pcp.GET('/api/v1/offerings/{id}', { params: { path: { id: made[0].id } } })).toEqual(patched);
    const active: string[] = [];
    for await (const o of pcp.list('/api/v1/offerings', { params: { query: { active: 'true', limit: 1 } } })) active.push(o.id);
    expect(active).toEqual([made[2].id, made[0].id]);

    await expect(new Pcp({ baseUrl, credentials: { apiKey: other.key } }).GET('/api/v1/offerings/{id}', { params: { path: { id: made[0].id } } })).rejects.toBeInstanceOf(NotFoundError);
    const invalid = await pcp.POST('/api/v1/offerings', { body: { name: 'X', amount: '0' } }).catch((e: unknown) => e);
    expect(invalid).toBeInstanceOf(InvalidRequestError);
    expect((invalid as InvalidRequestError).details).toEqual({ fields: [{ param: 'amount', message: 'amount must be greater than 0' }] });
    const readOnly = new Pcp({ baseUrl, credentials: { apiKey: await createKey(t.app, fresh.organizationId, ['offerings:read']) } });
    await expect(readOnly.POST('/api/v1/offerings', { body: { name: 'N', amount: '1.00' } })).rejects.toBeInstanceOf(PermissionError);
  });

  it('is in the OpenAPI document with PATCH and examples', async () => {
    const doc = (await t.http.get('/docs-json')).body;
    expect(Object.keys(doc.paths['/api/v1/offerings/{id}']).sort()).toEqual(['get', 'patch']);
    expect(Object.keys(doc.paths['/api/v1/offerings']).sort()).toEqual(['get', 'post']);
    expect(doc.paths['/api/v1/offerings/{id}'].patch.parameters.map((p: { name: string }) => p.name)).toContain('Idempotency-Key');
    expect(doc.components.schemas.OfferingDto.properties.amount.example).toBe('250.00');
    expect(doc.components.schemas.UpdateOfferingDto.required ?? []).toEqual([]);
  });
});
