import { randomUUID } from 'node:crypto';
import { createTestApp, TestApp } from '../support/app';
import { countSessions, expectError, expectInvalidParam } from '../support/errors';
import { createOrg, TestOrg } from '../support/factories';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const HOUR = 3600_000;

// testTimeout in a jest project entry is not applied (it is a global option); suites share the machine.
jest.setTimeout(30_000);

/** Checkout sessions (docs/api.md CheckoutSession, docs/architecture.md §6–7): response shape, validation, pagination, lookup. */
describe('checkout sessions', () => {
  let t: TestApp;
  let org: TestOrg;

  const post = (body: unknown, key = org.key) => t.http.post('/api/v1/checkout-sessions').set('X-Api-Key', key).send(body as object);

  beforeAll(async () => {
    t = await createTestApp();
    org = await createOrg(t.app);
  });
  afterAll(() => t.close());

  describe('create: the response', () => {
    it('has exactly the documented fields with canonical values and defaults', async () => {
      const before = Date.now();
      const res = await post({ amount: '12.5', description: 'Blue mug' });
      const after = Date.now();
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      const s = res.body;
      expect(Object.keys(s).sort()).toEqual(
        [
          'amount', 'createdAt', 'description', 'escrowId', 'escrowTemplateId', 'expiresAt', 'fee', 'id', 'metadata', 'orderId',
          'payUrl', 'redirectUrl', 'settlement', 'shopDomain', 'status', 'updatedAt', 'offeringId', 'quantity', 'invoiceId', 'refundedAmount',
        ].sort(),
      );
      expect(s.id).toMatch(UUID);
      expect(s).toEqual({
        id: s.id,
        amount: '12.50',
        refundedAmount: '0.00',
        description: 'Blue mug',
        status: 'open',
        settlement: 'escrow',
        orderId: null,
        shopDomain: null,
        escrowId: null,
        escrowTemplateId: 'custom',
        payUrl: `https://pay.test/checkout/${s.id}`,
        redirectUrl: null,
        metadata: null,
        fee: { source: 'checkout', grossAmount: '12.50', feeAmount: '0.00', netAmount: '12.50', bps: 0, currency: 'USDC' },
        offeringId: null,
        quantity: null,
        invoiceId: null,
        expiresAt: expect.stringMatching(ISO_UTC),
        createdAt: expect.stringMatching(ISO_UTC),
        updatedAt: expect.stringMatching(ISO_UTC),
      });
      const createdAt = Date.parse(s.createdAt);
      const expiresAt = Date.parse(s.expiresAt);
      // Postgres and this process share the host clock; allow a second of rounding either way.
      expect(createdAt).toBeGreaterThanOrEqual(before - 1000);
      expect(createdAt).toBeLessThanOrEqual(after + 1000);
      expect(expiresAt - 24 * HOUR).toBeGreaterThanOrEqual(before);
      expect(expiresAt - 24 * HOUR).toBeLessThanOrEqual(after);
    });

    it('echoes every optional field it accepts and stores the amount in base units', async () => {
      const expiresAt = new Date(Date.now() + 2 * HOUR).toISOString();
      const res = await post({
        amount: '0.000001',
        description: 'Tiny',
        redirectUrl: 'https://shop.example.com/thanks?order=42',
        webhookUrl: 'https://hooks.example.com/checkout',
        orderId: 'order-42',
        shopDomain: 'shop.example.com',
        escrowTemplateId: 'physical',
        metadata: { sku: 'MUG-1', qty: 2 },
        expiresAt,
      });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        amount: '0.000001',
        orderId: 'order-42',
        shopDomain: 'shop.example.com',
        redirectUrl: 'https://shop.example.com/thanks?order=42',
        escrowTemplateId: 'physical',
        metadata: { sku: 'MUG-1', qty: 2 },
        expiresAt,
        fee: { grossAmount: '0.000001', feeAmount: '0.00', netAmount: '0.000001', bps: 0 },
      });
      const rows = await t.dataSource.query('SELECT amount_units::text AS units, webhook_url FROM checkout_sessions WHERE id = $1', [res.body.id]);
      expect(rows).toEqual([{ units: '1', webhook_url: 'https://hooks.example.com/checkout' }]);
    });

    it.each([
      ['1', '1.00'],
      ['1000000', '1000000.00'],
      ['99.999999', '99.999999'],
      ['0.1', '0.10'],
      ['10.100', '10.10'],
    ])('renders amount %s as %s', async (input, canonical) => {
      const res = await post({ amount: input, description: 'amounts' });
      expect(res.status).toBe(200);
      expect(res.body.amount).toBe(canonical);
      expect(res.body.fee.grossAmount).toBe(canonical);
    });

    it('custom template accepts inspectionWindowHours at both bounds', async () => {
      for (const hours of [1, 2160]) {
        const res = await post({ amount: '5', description: 'bounds', escrowTemplateId: 'custom', metadata: { inspectionWindowHours: hours } });
        expect(res.status).toBe(200);
      }
    });

    it('reads back equal to what create returned', async () => {
      const created = await post({ amount: '7.25', description: 'read back' });
      const got = await t.http.get(`/api/v1/checkout-sessions/${created.body.id}`).set('X-Api-Key', org.key);
      expect(got.status).toBe(200);
      expect(got.body).toEqual(created.body);
    });
  });

  describe('create: invalid input → 400 naming the field, nothing written', () => {
    const valid = { amount: '10.00', description: 'valid' };
    const ahead = (ms: number) => new Date(Date.now() + ms).toISOString();
    const cases: Array<[string, () => unknown, string]> = [
      ['amount "1e5"', () => ({ ...valid, amount: '1e5' }), 'amount'],
      ['amount "-1"', () => ({ ...valid, amount: '-1' }), 'amount'],
      ['amount "0"', () => ({ ...valid, amount: '0' }), 'amount'],
      ['amount "0.000000"', () => ({ ...valid, amount: '0.000000' }), 'amount'],
      ['amount "1.0000001"', () => ({ ...valid, amount: '1.0000001' }), 'amount'],
      ['amount "01"', () => ({ ...valid, amount: '01' }), 'amount'],
      ['amount " 1"', () => ({ ...valid, amount: ' 1' }), 'amount'],
      ['amount "1."', () => ({ ...valid, amount: '1.' }), 'amount'],
      ['amount as a number', () => ({ ...valid, amount: 5 }), 'amount'],
      ['amount null', () => ({ ...valid, amount: null }), 'amount'],
      ['amount missing', () => ({ description: 'x' }), 'amount'],
      ['amount over MAX_AMOUNT', () => ({ ...valid, amount: '1000000.000001' }), 'amount'],
      ['amount far over MAX_AMOUNT', () => ({ ...valid, amount: '99999999999999999999999' }), 'amount'],
      ['description missing', () => ({ amount: '1' }), 'description'],
      ['description empty', () => ({ amount: '1', description: '' }), 'description'],
      ['description with a NUL character', () => ({ amount: '1', description: 'a\u0000b' }), 'description'],
      ['metadata value with a NUL character', () => ({ ...valid, metadata: { note: { text: 'x\u0000' } } }), 'metadata.note.text'],
      ['orderId with a NUL character', () => ({ ...valid, orderId: '\u0000' }), 'orderId'],
      ['description of 10 kB', () => ({ amount: '1', description: 'x'.repeat(10 * 1024) }), 'description'],
      ['redirectUrl "not a url"', () => ({ ...valid, redirectUrl: 'not a url' }), 'redirectUrl'],
      ['redirectUrl "ftp://x"', () => ({ ...valid, redirectUrl: 'ftp://x' }), 'redirectUrl'],
      ['webhookUrl "not a url"', () => ({ ...valid, webhookUrl: 'not a url' }), 'webhookUrl'],
      ['webhookUrl "ftp://x"', () => ({ ...valid, webhookUrl: 'ftp://x' }), 'webhookUrl'],
      ['unknown escrowTemplateId', () => ({ ...valid, escrowTemplateId: 'subscription' }), 'escrowTemplateId'],
      ['unknown extra property', () => ({ ...valid, currency: 'EUR' }), 'currency'],
      ['metadata not an object', () => ({ ...valid, metadata: 'x' }), 'metadata'],
      ['custom inspectionWindowHours 0', () => ({ ...valid, escrowTemplateId: 'custom', metadata: { inspectionWindowHours: 0 } }), 'metadata.inspectionWindowHours'],
      ['custom inspectionWindowHours 5000', () => ({ ...valid, escrowTemplateId: 'custom', metadata: { inspectionWindowHours: 5000 } }), 'metadata.inspectionWindowHours'],
      ['default (custom) template, inspectionWindowHours 1.5', () => ({ ...valid, metadata: { inspectionWindowHours: 1.5 } }), 'metadata.inspectionWindowHours'],
      ['expiresAt 10 minutes ahead', () => ({ ...valid, expiresAt: ahead(10 * 60_000) }), 'expiresAt'],
      ['expiresAt 2 days ahead', () => ({ ...valid, expiresAt: ahead(48 * HOUR) }), 'expiresAt'],
      ['expiresAt in the past', () => ({ ...valid, expiresAt: ahead(-HOUR) }), 'expiresAt'],
      ['expiresAt not a timestamp', () => ({ ...valid, expiresAt: 'tomorrow' }), 'expiresAt'],
      ['idempotencyKey of 129 characters', () => ({ ...valid, idempotencyKey: 'k'.repeat(129) }), 'idempotencyKey'],
    ];

    let invalidOrg: TestOrg;
    beforeAll(async () => {
      invalidOrg = await createOrg(t.app);
    });

    it.each(cases)('%s', async (_name, body, param) => {
      const res = await post(body(), invalidOrg.key);
      expectInvalidParam(res, param);
      expect(await countSessions(t.dataSource, invalidOrg.organizationId)).toBe(0);
    });

    it('a body that is not an object → 400', async () => {
      const res = await t.http.post('/api/v1/checkout-sessions').set('X-Api-Key', invalidOrg.key).set('Content-Type', 'application/json').send('[1,2]');
      expectError(res, 400, 'invalid_request');
      expect(await countSessions(t.dataSource, invalidOrg.organizationId)).toBe(0);
    });

    it('names every invalid field at once', async () => {
      const res = await post({ amount: '1e5', redirectUrl: 'ftp://x' }, invalidOrg.key);
      const details = expectError(res, 400, 'invalid_request');
      const params = (details?.fields as Array<{ param: string }>).map((f) => f.param);
      expect(new Set(params)).toEqual(new Set(['amount', 'description', 'redirectUrl']));
    });
  });

  describe('list pagination', () => {
    let pager: TestOrg;
    let created: string[];

    beforeAll(async () => {
      pager = await createOrg(t.app);
      created = [];
      for (let i = 0; i < 25; i++) {
        const res = await post({ amount: `${i + 1}`, description: `session ${i}` }, pager.key);
        expect(res.status).toBe(200);
        created.push(res.body.id);
      }
    });

    const list = (query: Record<string, unknown>, key = pager.key) => t.http.get('/api/v1/checkout-sessions').query(query).set('X-Api-Key', key);

    it('walks 25 sessions as 10/10/5, newest first, chaining nextCursor into starting_after', async () => {
      const newestFirst = [...created].reverse();
      const p1 = await list({ limit: 10 });
      expect(p1.status).toBe(200);
      expect(Object.keys(p1.body).sort()).toEqual(['data', 'hasMore', 'nextCursor']);
      expect(p1.body.data).toHaveLength(10);
      expect(p1.body.hasMore).toBe(true);
      expect(p1.body.nextCursor).toBe(p1.body.data[9].id);

      const p2 = await list({ limit: 10, starting_after: p1.body.nextCursor });
      expect(p2.status).toBe(200);
      expect(p2.body.data).toHaveLength(10);
      expect(p2.body.hasMore).toBe(true);
      expect(p2.body.nextCursor).toBe(p2.body.data[9].id);

      const p3 = await list({ limit: 10, starting_after: p2.body.nextCursor });
      expect(p3.status).toBe(200);
      expect(p3.body.data).toHaveLength(5);
      expect(p3.body.hasMore).toBe(false);
      expect(p3.body.nextCursor).toBeNull();

      const ids = [...p1.body.data, ...p2.body.data, ...p3.body.data].map((s: { id: string }) => s.id);
      expect(new Set(ids).size).toBe(25);
      expect(ids).toEqual(newestFirst);
      const amounts = p1.body.data.map((s: { amount: string }) => s.amount);
      expect(amounts.slice(0, 3)).toEqual(['25.00', '24.00', '23.00']);
      const times = [...p1.body.data, ...p2.body.data, ...p3.body.data].map((s: { createdAt: string }) => Date.parse(s.createdAt));
      for (let i = 1; i < times.length; i++) expect(times[i]).toBeLessThanOrEqual(times[i - 1]);
    });

    it('a session created mid-walk shows only on a fresh first page (no duplicates, no gaps)', async () => {
      const walker = await createOrg(t.app);
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) ids.push((await post({ amount: '1', description: `walk ${i}` }, walker.key)).body.id);
      const p1 = await list({ limit: 2 }, walker.key);
      const late = (await post({ amount: '2', description: 'late' }, walker.key)).body.id;
      const p2 = await list({ limit: 2, starting_after: p1.body.nextCursor }, walker.key);
      const p3 = await list({ limit: 2, starting_after: p2.body.nextCursor }, walker.key);
      const walked = [...p1.body.data, ...p2.body.data, ...p3.body.data].map((s: { id: string }) => s.id);
      expect(walked).toEqual([...ids].reverse());
      expect(p3.body.hasMore).toBe(false);
      expect((await list({ limit: 1 }, walker.key)).body.data[0].id).toBe(late);
    });

    it('list items have the same shape as a single session', async () => {
      const page = await list({ limit: 1 });
      const one = await t.http.get(`/api/v1/checkout-sessions/${page.body.data[0].id}`).set('X-Api-Key', pager.key);
      expect(page.body.data[0]).toEqual(one.body);
    });

    it('a page of exactly the remaining items says hasMore false', async () => {
      const res = await list({ limit: 25 });
      expect(res.body.data).toHaveLength(25);
      expect(res.body.hasMore).toBe(false);
      expect(res.body.nextCursor).toBeNull();
      const last = await list({ limit: 1, starting_after: created[0] });
      expect(last.body).toEqual({ data: [], hasMore: false, nextCursor: null });
    });

    it('defaults to 10 items', async () => {
      const res = await list({});
      expect(res.status).toBe(200);
      expect(res.body.data).toHaveLength(10);
      expect(res.body.hasMore).toBe(true);
    });

    it('accepts limit at its bounds 1 and 100', async () => {
      expect((await list({ limit: 1 })).body.data).toHaveLength(1);
      expect((await list({ limit: 100 })).body.data).toHaveLength(25);
    });

    it.each(['0', '101', '-1', '1.5', 'abc'])('limit=%j → 400 naming limit', async (limit) => {
      expectInvalidParam(await list({ limit }), 'limit');
    });

    it('starting_after that is unknown → 400 naming starting_after, never 404', async () => {
      expectInvalidParam(await list({ starting_after: randomUUID() }), 'starting_after');
    });

    it('starting_after that is not an id → 400 naming starting_after', async () => {
      expectInvalidParam(await list({ starting_after: 'not-an-id' }), 'starting_after');
      expectInvalidParam(await list({ starting_after: "' OR 1=1 --" }), 'starting_after');
    });

    it("starting_after of another organisation's session → 400, never 404 or a page", async () => {
      const other = await createOrg(t.app);
      const theirs = await post({ amount: '1', description: 'theirs' }, other.key);
      expect(theirs.status).toBe(200);
      expectInvalidParam(await list({ starting_after: theirs.body.id }), 'starting_after');
    });

    it('unknown query parameters → 400', async () => {
      expectInvalidParam(await list({ ending_before: created[3] }), 'ending_before');
    });
  });

  describe('get', () => {
    it('an unknown id → 404 not_found', async () => {
      expectError(await t.http.get(`/api/v1/checkout-sessions/${randomUUID()}`).set('X-Api-Key', org.key), 404, 'not_found');
    });

    it.each(['not-a-uuid', '123', '0193a0f2-5b1c-7cc4-9d7e-1f2a3b4c5d6'])('a non-uuid id %j → 404 not_found', async (id) => {
      expectError(await t.http.get(`/api/v1/checkout-sessions/${id}`).set('X-Api-Key', org.key), 404, 'not_found');
    });
  });
});
