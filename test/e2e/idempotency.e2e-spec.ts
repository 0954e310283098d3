import { randomUUID } from 'node:crypto';
import { createTestApp, TestApp } from '../support/app';
import { countIdempotencyRecords, countSessions, expectError, expectInvalidParam } from '../support/errors';
import { createKey, createOrg, TestOrg } from '../support/factories';

// testTimeout in a jest project entry is not applied (it is a global option); suites share the machine.
jest.setTimeout(30_000);

/** Idempotency-Key on POST /api/v1/checkout-sessions (docs/architecture.md §5, docs/decisions.md). */
describe('idempotency', () => {
  let t: TestApp;

  const post = (org: TestOrg, body: unknown, key?: string, credential = org.key) => {
    const req = t.http.post('/api/v1/checkout-sessions').set('X-Api-Key', credential);
    if (key !== undefined) req.set('Idempotency-Key', key);
    return req.send(body as object);
  };

  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  it('a replay returns the byte-identical body with Idempotent-Replayed: true (first: false) and creates nothing', async () => {
    const org = await createOrg(t.app);
    const key = randomUUID();
    const body = { amount: '12.5', description: 'replay me', metadata: { b: 1, a: { z: true, c: [3, 2, 1] } }, orderId: 'o-1' };
    const first = await post(org, body, key);
    expect(first.status).toBe(200);
    expect(first.headers['idempotent-replayed']).toBe('false');
    const second = await post(org, body, key);
    expect(second.status).toBe(200);
    expect(second.headers['idempotent-replayed']).toBe('true');
    expect(second.text).toBe(first.text);
    expect(second.headers['content-type']).toBe(first.headers['content-type']);
    expect(second.headers['x-request-id']).not.toBe(first.headers['x-request-id']);
    expect(await countSessions(t.dataSource, org.organizationId)).toBe(1);
  });

  it('requests without a key are not idempotent and carry no Idempotent-Replayed header', async () => {
    const org = await createOrg(t.app);
    const a = await post(org, { amount: '1', description: 'no key' });
    const b = await post(org, { amount: '1', description: 'no key' });
    expect(a.body.id).not.toBe(b.body.id);
    expect(a.headers['idempotent-replayed']).toBeUndefined();
    expect(await countSessions(t.dataSource, org.organizationId)).toBe(2);
  });

  it('the same key with another body → 422 idempotency_conflict (payload_mismatch), nothing created', async () => {
    const org = await createOrg(t.app);
    const key = randomUUID();
    expect((await post(org, { amount: '10', description: 'first' }, key)).status).toBe(200);
    const res = await post(org, { amount: '11', description: 'first' }, key);
    expect(expectError(res, 422, 'idempotency_conflict')?.reason).toBe('payload_mismatch');
    expect(await countSessions(t.dataSource, org.organizationId)).toBe(1);
  });

  it('reordered JSON keys (at every depth) are not a mismatch', async () => {
    const org = await createOrg(t.app);
    const key = randomUUID();
    const first = await post(org, { amount: '3', description: 'order', metadata: { x: 1, y: { p: 1, q: 2 } } }, key);
    expect(first.status).toBe(200);
    const raw = '{"metadata":{"y":{"q":2,"p":1},"x":1},"description":"order","amount":"3"}';
    const res = await t.http
      .post('/api/v1/checkout-sessions')
      .set('X-Api-Key', org.key)
      .set('Idempotency-Key', key)
      .set('Content-Type', 'application/json')
      .send(raw);
    expect(res.status).toBe(200);
    expect(res.headers['idempotent-replayed']).toBe('true');
    expect(res.body.id).toBe(first.body.id);
    expect(await countSessions(t.dataSource, org.organizationId)).toBe(1);
  });

  it('a 129-character key → 400 naming Idempotency-Key; 128 characters works', async () => {
    const org = await createOrg(t.app);
    const long = await post(org, { amount: '1', description: 'long key' }, 'k'.repeat(129));
    expectInvalidParam(long, 'Idempotency-Key');
    expect(await countSessions(t.dataSource, org.organizationId)).toBe(0);
    const max = await post(org, { amount: '1', description: 'long key' }, 'k'.repeat(128));
    expect(max.status).toBe(200);
    expect(max.headers['idempotent-replayed']).toBe('false');
    expect((await post(org, { amount: '1', description: 'long key' }, 'k'.repeat(128))).headers['idempotent-replayed']).toBe('true');
  });

  it('a key with a space, a control character or nothing in it → 400 naming the key', async () => {
    const org = await createOrg(t.app);
    expectInvalidParam(await post(org, { amount: '1', description: 'x' }, 'has space'), 'Idempotency-Key');
    expectInvalidParam(await post(org, { amount: '1', description: 'x', idempotencyKey: 'tab\tkey' }), 'idempotencyKey');
    expectInvalidParam(await post(org, { amount: '1', description: 'x', idempotencyKey: '' }), 'idempotencyKey');
    expect(await countSessions(t.dataSource, org.organizationId)).toBe(0);
  });

  it('body idempotencyKey equal to the header works; different → 400', async () => {
    const org = await createOrg(t.app);
    const key = randomUUID();
    const same = await post(org, { amount: '2', description: 'both', idempotencyKey: key }, key);
    expect(same.status).toBe(200);
    const differ = await post(org, { amount: '2', description: 'both', idempotencyKey: randomUUID() }, randomUUID());
    expectInvalidParam(differ, 'idempotencyKey');
    expect(await countSessions(t.dataSource, org.organizationId)).toBe(1);
  });

  it('body idempotencyKey alone is the key: replays the header form and vice versa', async () => {
    const org = await createOrg(t.app);
    const key = randomUUID();
    const first = await post(org, { amount: '4', description: 'body key', idempotencyKey: key });
    expect(first.status).toBe(200);
    expect(first.headers['idempotent-replayed']).toBe('false');
    const again = await post(org, { amount: '4', description: 'body key', idempotencyKey: key });
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.text).toBe(first.text);
    const viaHeader = await post(org, { amount: '4', description: 'body key' }, key);
    expect(viaHeader.headers['idempotent-replayed']).toBe('true');
    expect(viaHeader.body.id).toBe(first.body.id);
    const mismatch = await post(org, { amount: '5', description: 'body key', idempotencyKey: key });
    expectError(mismatch, 422, 'idempotency_conflict');
    expect(await countSessions(t.dataSource, org.organizationId)).toBe(1);
  });

  it('20 concurrent requests with one key create exactly one session; the rest replay it or get 409 with Retry-After: 1', async () => {
    const org = await createOrg(t.app);
    const key = randomUUID();
    const body = { amount: '20', description: 'stampede' };
    const responses = await Promise.all(Array.from({ length: 20 }, () => post(org, body, key)));
    expect(await countSessions(t.dataSource, org.organizationId)).toBe(1);
    expect(await countIdempotencyRecords(t.dataSource, org.organizationId)).toBe(1);
    const [session] = await t.dataSource.query('SELECT id FROM checkout_sessions WHERE organization_id = $1', [org.organizationId]);
    const originals = responses.filter((r) => r.status === 200 && r.headers['idempotent-replayed'] === 'false');
    expect(originals).toHaveLength(1);
    for (const r of responses) {
      if (r.status === 200) {
        expect(r.body.id).toBe(session.id);
        if (r !== originals[0]) expect(r.headers['idempotent-replayed']).toBe('true');
      } else {
        expect(expectError(r, 409, 'idempotency_conflict')?.reason).toBe('in_progress');
        expect(r.headers['retry-after']).toBe('1');
      }
    }
    const after = await post(org, body, key);
    expect(after.status).toBe(200);
    expect(after.headers['idempotent-replayed']).toBe('true');
    expect(after.text).toBe(originals[0].text);
  });

  it('the same key used by another organisation does not collide', async () => {
    const a = await createOrg(t.app);
    const b = await createOrg(t.app);
    const key = randomUUID();
    const body = { amount: '6', description: 'shared key' };
    const ra = await post(a, body, key);
    const rb = await post(b, body, key);
    expect(ra.status).toBe(200);
    expect(rb.status).toBe(200);
    expect(rb.headers['idempotent-replayed']).toBe('false');
    expect(ra.body.id).not.toBe(rb.body.id);
    expect(await countSessions(t.dataSource, a.organizationId)).toBe(1);
    expect(await countSessions(t.dataSource, b.organizationId)).toBe(1);
    expect((await t.http.get(`/api/v1/checkout-sessions/${rb.body.id}`).set('X-Api-Key', b.key)).status).toBe(200);
    const mismatchInB = await post(b, { ...body, amount: '7' }, key);
    expectError(mismatchInB, 422, 'idempotency_conflict');
  });

  it('a second merchant key of the same organisation shares the merchant scope of the key', async () => {
    const org = await createOrg(t.app);
    const other = await createKey(t.app, org.organizationId, ['checkout:write']);
    const key = randomUUID();
    const body = { amount: '8', description: 'same principal' };
    const first = await post(org, body, key);
    const second = await post(org, body, key, other);
    expect(second.headers['idempotent-replayed']).toBe('true');
    expect(second.body.id).toBe(first.body.id);
  });

  it('a validation 400 under a key is not stored: fixing the body and retrying with the same key succeeds', async () => {
    const org = await createOrg(t.app);
    const key = randomUUID();
    const bad = await post(org, { amount: '1e5', description: 'fix me' }, key);
    expectInvalidParam(bad, 'amount');
    expect(bad.headers['idempotent-replayed']).toBeUndefined();
    const overMax = await post(org, { amount: '2000000', description: 'fix me' }, key);
    expectInvalidParam(overMax, 'amount');
    expect(await countIdempotencyRecords(t.dataSource, org.organizationId)).toBe(0);
    const fixed = await post(org, { amount: '15', description: 'fix me' }, key);
    expect(fixed.status).toBe(200);
    expect(fixed.headers['idempotent-replayed']).toBe('false');
    expect(fixed.body.amount).toBe('15.00');
    expect(await countSessions(t.dataSource, org.organizationId)).toBe(1);
  });

  it('a 403 missing_scope under a key is not stored: the same key later works with a write key', async () => {
    const org = await createOrg(t.app);
    const reader = await createKey(t.app, org.organizationId, ['checkout:read']);
    const key = randomUUID();
    const body = { amount: '9', description: 'scope first' };
    expectError(await post(org, body, key, reader), 403, 'missing_scope');
    expect(await countIdempotencyRecords(t.dataSource, org.organizationId)).toBe(0);
    const ok = await post(org, body, key);
    expect(ok.status).toBe(200);
    expect(ok.headers['idempotent-replayed']).toBe('false');
  });

  it('a 404 under a key is not stored (the escrow may become visible later): no record, the retry runs again', async () => {
    const org = await createOrg(t.app);
    const key = randomUUID();
    const release = (id: string) =>
      t.http
        .post(`/api/v1/escrows/${id}/release`)
        .set('X-Api-Key', org.key)
        .set('Idempotency-Key', key)
        .send({ txHash: `0x${'ab'.repeat(32)}`, confirm: true });
    const id = randomUUID();
    const first = await release(id);
    expectError(first, 404, 'not_found');
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    const again = await release(id);
    expectError(again, 404, 'not_found');
    expect(again.headers['idempotent-replayed']).toBeUndefined();
    expectError(await release('not-a-uuid'), 404, 'not_found');
    expect(await countIdempotencyRecords(t.dataSource, org.organizationId)).toBe(0);
  });

  it('the idempotency record is written in the same transaction as the session', async () => {
    const org = await createOrg(t.app);
    const key = randomUUID();
    const res = await post(org, { amount: '30', description: 'atomic' }, key);
    expect(res.status).toBe(200);
    const records = await t.dataSource.query(
      `SELECT r.response_status, r.idempotency_key, r.method, r.path, r.response_body::text LIKE '%' || s.id || '%' AS body_has_id,
              r.created_at = s.created_at AS same_transaction
         FROM idempotency_records r JOIN checkout_sessions s ON s.organization_id = r.organization_id
        WHERE r.organization_id = $1`,
      [org.organizationId],
    );
    // now() is the transaction's start time, so equal created_at values mean one transaction.
    expect(records).toEqual([
      { response_status: 200, idempotency_key: key, method: 'POST', path: '/api/v1/checkout-sessions', body_has_id: true, same_transaction: true },
    ]);
  });
});
