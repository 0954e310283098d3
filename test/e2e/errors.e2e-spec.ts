import { randomUUID } from 'node:crypto';
import { DEV_SECRETS } from '../../src/config/secrets';
import { createTestApp, TestApp } from '../support/app';
import { expectError } from '../support/errors';
import { createKey, createOrg, TestOrg } from '../support/factories';

// testTimeout in a jest project entry is not applied (it is a global option); suites share the machine.
jest.setTimeout(30_000);

/** Error body, request ids, body limits, rate limits (docs/architecture.md §4, docs/decisions.md), docs, health and metrics. */
describe('errors, request ids, limits, docs and health', () => {
  let t: TestApp;
  let org: TestOrg;

  beforeAll(async () => {
    t = await createTestApp();
    org = await createOrg(t.app);
  });
  afterAll(() => t.close());

  describe('the error body {error, code, requestId, details?} with requestId = X-Request-Id', () => {
    it.each<[string, () => Promise<import('supertest').Response>, number, string, (d: Record<string, unknown> | undefined) => void]>([
      ['401 no credential', () => t.http.get('/api/v1/me'), 401, 'unauthorized', (d) => expect(d).toBeUndefined()],
      ['401 unknown key', () => t.http.get('/api/v1/me').set('X-Api-Key', 'bk_live_nope'), 401, 'unauthorized', (d) => expect(d).toBeUndefined()],
      [
        '403 missing_scope',
        async () => t.http.post('/api/v1/checkout-sessions').set('X-Api-Key', await createKey(t.app, org.organizationId, ['checkout:read'])).send({}),
        403,
        'missing_scope',
        (d) => expect(d).toEqual({ required: ['checkout:write'], granted: ['checkout:read'] }),
      ],
      [
        '404 unknown session',
        () => t.http.get(`/api/v1/checkout-sessions/${randomUUID()}`).set('X-Api-Key', org.key),
        404,
        'not_found',
        (d) => expect(d).toBeUndefined(),
      ],
      [
        '400 validation',
        () => t.http.post('/api/v1/checkout-sessions').set('X-Api-Key', org.key).send({ amount: '1e5', description: 'x' }),
        400,
        'invalid_request',
        (d) => expect(d).toEqual({ fields: [{ param: 'amount', message: expect.any(String) }] }),
      ],
      [
        '400 list limit',
        () => t.http.get('/api/v1/checkout-sessions?limit=0').set('X-Api-Key', org.key),
        400,
        'invalid_request',
        (d) => expect(d).toEqual({ fields: [{ param: 'limit', message: expect.any(String) }] }),
      ],
      [
        '400 public route validation',
        () => t.http.get('/api/v1/fees/quote?amount=-1'),
        400,
        'invalid_request',
        (d) => expect((d?.fields as Array<{ param: string }>).map((f) => f.param)).toContain('amount'),
      ],
      [
        '422 idempotency payload mismatch',
        async () => {
          const key = randomUUID();
          await t.http.post('/api/v1/checkout-sessions').set('X-Api-Key', org.key).set('Idempotency-Key', key).send({ amount: '1', description: 'a' });
          return t.http.post('/api/v1/checkout-sessions').set('X-Api-Key', org.key).set('Idempotency-Key', key).send({ amount: '2', description: 'a' });
        },
        422,
        'idempotency_conflict',
        (d) => expect(d).toEqual({ reason: 'payload_mismatch' }),
      ],
      ['404 unknown route', () => t.http.get('/api/v1/nope'), 404, 'not_found', (d) => expect(d).toBeUndefined()],
      ['404 unknown method on a known path', () => t.http.delete('/api/v1/checkout-sessions').set('X-Api-Key', org.key), 404, 'not_found', () => {}],
      [
        '400 malformed JSON',
        () => t.http.post('/api/v1/checkout-sessions').set('X-Api-Key', org.key).set('Content-Type', 'application/json').send('{"amount": "1",'),
        400,
        'invalid_request',
        () => {},
      ],
      [
        '400 body over 100 kB',
        () => t.http.post('/api/v1/checkout-sessions').set('X-Api-Key', org.key).send({ amount: '1', description: 'x'.repeat(101 * 1024) }),
        400,
        'invalid_request',
        () => {},
      ],
    ])('%s', async (_name, send, status, code, checkDetails) => {
      const res = await send();
      checkDetails(expectError(res, status, code));
      expect(res.body.requestId).toMatch(/^[A-Za-z0-9._:-]{8,128}$/);
    });

    it('unknown routes answer in our body, with or without a credential, on any method', async () => {
      for (const res of [
        await t.http.get('/nope'),
        await t.http.post('/api/v2/checkout-sessions').send({}),
        await t.http.get('/api/v1/checkout-sessions/a/b').set('X-Api-Key', org.key),
      ]) {
        expectError(res, 404, 'not_found');
        expect(res.text).not.toMatch(/Cannot (GET|POST)/);
      }
    });

    it('malformed JSON → 400 invalid_request, even on a public route, and nothing reaches the handler', async () => {
      const res = await t.http.post('/oauth/token').set('Content-Type', 'application/json').send('{grant_type: client_credentials}');
      expectError(res, 400, 'invalid_request');
      expect(res.text).not.toMatch(/SyntaxError|Unexpected token|at JSON\.parse/);
    });

    it('a body over 100 kB → 400 invalid_request; just under passes the parser (then fails validation by field)', async () => {
      const big = await t.http
        .post('/api/v1/checkout-sessions')
        .set('X-Api-Key', org.key)
        .send({ amount: '1', description: 'x', metadata: { blob: 'y'.repeat(100 * 1024) } });
      expectError(big, 400, 'invalid_request');
      expect(big.body.details).toEqual({ reason: 'entity.too.large' });
      const under = await t.http.post('/api/v1/checkout-sessions').set('X-Api-Key', org.key).send({ amount: '1', description: 'x'.repeat(90 * 1024) });
      expect(expectError(under, 400, 'invalid_request')?.fields).toEqual([{ param: 'description', message: expect.any(String) }]);
    });
  });

  describe('X-Request-Id', () => {
    it('is present on success responses and unique per request', async () => {
      const a = await t.http.get('/api/v1/me').set('X-Api-Key', org.key);
      const b = await t.http.get('/health/live');
      const c = await t.http.get('/api/v1/fees/quote?amount=1');
      for (const res of [a, b, c]) {
        expect(res.status).toBe(200);
        expect(res.headers['x-request-id']).toMatch(/^[A-Za-z0-9._:-]{8,128}$/);
      }
      expect(new Set([a, b, c].map((r) => r.headers['x-request-id'])).size).toBe(3);
    });

    it('a valid incoming X-Request-Id is echoed back, on success and in the error body', async () => {
      const id = `client-${randomUUID()}`;
      const ok = await t.http.get('/api/v1/me').set('X-Api-Key', org.key).set('X-Request-Id', id);
      expect(ok.status).toBe(200);
      expect(ok.headers['x-request-id']).toBe(id);
      const err = await t.http.get('/api/v1/me').set('X-Request-Id', id);
      expectError(err, 401, 'unauthorized');
      expect(err.body.requestId).toBe(id);
      const max = 'r'.repeat(128);
      expect((await t.http.get('/health/live').set('X-Request-Id', max)).headers['x-request-id']).toBe(max);
    });

    it.each([
      ['containing spaces', 'my request id'],
      ['too long (129 characters)', 'r'.repeat(129)],
      ['too short', 'abc'],
      ['with markup', '<script>alert(1)</script>'],
    ])('an invalid incoming X-Request-Id (%s) is replaced', async (_name, id) => {
      const ok = await t.http.get('/health/live').set('X-Request-Id', id);
      expect(ok.headers['x-request-id']).toMatch(/^[A-Za-z0-9._:-]{8,128}$/);
      expect(ok.headers['x-request-id']).not.toBe(id);
      const err = await t.http.get('/api/v1/me').set('X-Request-Id', id);
      expectError(err, 401, 'unauthorized');
      expect(err.body.requestId).not.toBe(id);
    });
  });

  describe('rate limit', () => {
    let limited: TestApp;
    beforeAll(async () => {
      limited = await createTestApp({ RATE_LIMIT_PER_MINUTE: '3' });
    });
    afterAll(() => limited.close());

    it('the 4th request with one key → 429 rate_limited with Retry-After and RateLimit headers; another key is unaffected', async () => {
      const own = await createOrg(limited.app);
      const other = await createKey(limited.app, own.organizationId, ['checkout:read']);
      for (let i = 1; i <= 3; i++) {
        const res = await limited.http.get('/api/v1/checkout-sessions').set('X-Api-Key', own.key);
        expect(res.status).toBe(200);
        expect(res.headers['ratelimit-policy']).toBe('"default";q=3;w=60');
        expect(res.headers['ratelimit']).toMatch(new RegExp(`^"default";r=${3 - i};t=\\d+$`));
      }
      const fourth = await limited.http.get('/api/v1/checkout-sessions').set('X-Api-Key', own.key);
      expect(expectError(fourth, 429, 'rate_limited')).toEqual({ limit: 3, windowSeconds: 60 });
      const retryAfter = Number(fourth.headers['retry-after']);
      expect(Number.isInteger(retryAfter)).toBe(true);
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(60);
      expect(fourth.headers['ratelimit-policy']).toBe('"default";q=3;w=60');
      expect(fourth.headers['ratelimit']).toMatch(/^"default";r=0;t=\d+$/);

      const viaBearer = await limited.http.get('/api/v1/me').set('Authorization', `Bearer ${own.key}`);
      expectError(viaBearer, 429, 'rate_limited');

      const unaffected = await limited.http.get('/api/v1/checkout-sessions').set('X-Api-Key', other);
      expect(unaffected.status).toBe(200);
      expect(unaffected.headers['ratelimit']).toMatch(/^"default";r=2;t=\d+$/);
    });

    it('a rate-limited create writes nothing and stores no idempotency record', async () => {
      const own = await createOrg(limited.app);
      for (let i = 0; i < 3; i++) expect((await limited.http.get('/api/v1/me').set('X-Api-Key', own.key)).status).toBe(200);
      const res = await limited.http
        .post('/api/v1/checkout-sessions')
        .set('X-Api-Key', own.key)
        .set('Idempotency-Key', randomUUID())
        .send({ amount: '1', description: 'too many' });
      expectError(res, 429, 'rate_limited');
      const rows = await limited.dataSource.query(
        `SELECT (SELECT count(*)::int FROM checkout_sessions WHERE organization_id = $1) AS sessions,
                (SELECT count(*)::int FROM idempotency_records WHERE organization_id = $1) AS records`,
        [own.organizationId],
      );
      expect(rows).toEqual([{ sessions: 0, records: 0 }]);
    });
  });

  describe('500 internal', () => {
    it('has the generic body: no stack, no SQL, no driver message', async () => {
      const broken = await createTestApp();
      const own = await createOrg(broken.app);
      try {
        // The honest way to a 500 without a test-only route: the database goes away under the app.
        await broken.dataSource.destroy();
        const res = await broken.http.get('/api/v1/checkout-sessions').set('X-Api-Key', own.key);
        expect(expectError(res, 500, 'internal')).toBeUndefined();
        expect(res.body.error).toBe('Internal server error');
        expect(res.text).not.toMatch(/\bat \S+ \(|\.ts:\d+|\.js:\d+|stack|SELECT|FROM|Connection|TypeORM|Error:/i);
      } finally {
        await broken.close();
      }
    });
  });

  describe('OpenAPI document and Swagger UI', () => {
    let doc: {
      openapi: string;
      info: { version: string };
      paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema?: unknown }> }> }>>;
      components: { securitySchemes: Record<string, Record<string, unknown>>; schemas: Record<string, unknown> };
    };
    beforeAll(async () => {
      const res = await t.http.get('/docs-json');
      expect(res.status).toBe(200);
      doc = res.body;
    });

    it('is version 2.0.0 with both security schemes', () => {
      expect(doc.info.version).toBe('2.0.0');
      expect(doc.components.securitySchemes.apiKey).toMatchObject({ type: 'apiKey', in: 'header', name: 'X-Api-Key' });
      expect(doc.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
    });

    const known: Array<[string, string, string]> = [
      ['get', '/api/v1/me', 'MeDto'],
      ['get', '/api/v1/checkout-sessions', 'CheckoutSessionListDto'],
      ['post', '/api/v1/checkout-sessions', 'CheckoutSessionDto'],
      ['get', '/api/v1/checkout-sessions/{id}', 'CheckoutSessionDto'],
      ['get', '/api/v1/fees/quote', 'FeeQuoteDto'],
      ['post', '/oauth/token', 'TokenResponseDto'],
    ];

    it.each(known)('documents %s %s with a 200 response schema %s', (method, path, schema) => {
      const op = doc.paths[path]?.[method];
      expect(Object.keys(op?.responses ?? {})).toContain('200');
      expect(op.responses['200'].content?.['application/json']?.schema).toEqual({ $ref: `#/components/schemas/${schema}` });
      expect(doc.components.schemas[schema]).toEqual(expect.objectContaining({ type: 'object', properties: expect.any(Object) }));
      expect(op.responses['201']).toBeUndefined();
    });

    it('documents every REST route the app serves under /api and /oauth, and nothing it does not serve', () => {
      const router = (t.app.getHttpAdapter().getInstance() as { router: { stack: Array<{ route?: { path: string; methods: Record<string, boolean> } }> } })
        .router;
      const served = router.stack
        .filter((layer) => layer.route && !layer.route.path.startsWith('{/*'))
        .flatMap((layer) =>
          Object.keys(layer.route!.methods).map((m) => `${m} ${layer.route!.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}')}`),
        );
      const servedApi = served.filter((route) => /^\w+ \/(api|oauth)\//.test(route));
      for (const [m, p] of known) expect(servedApi).toContain(`${m} ${p}`);
      const documented = Object.entries(doc.paths).flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m} ${p}`));
      for (const route of new Set(servedApi)) expect(documented).toContain(route);
      for (const route of documented) expect(served).toContain(route);
    });

    it('every documented operation answers 200 with a JSON schema, never 201 (docs/architecture.md §4; the x402 challenge answers 402)', () => {
      for (const [path, ops] of Object.entries(doc.paths)) {
        for (const [method, op] of Object.entries(ops)) {
          if (op.responses['402']) continue;
          // The one non-JSON answer: the statement export is an RFC 4180 CSV (DESIGN §21), documented as text/csv.
          const mediaType = `${method} ${path}` === 'get /api/v1/balance-transactions/export' ? 'text/csv' : 'application/json';
          expect({ op: `${method} ${path}`, schema: op.responses['200']?.content?.[mediaType]?.schema !== undefined }).toEqual({
            op: `${method} ${path}`,
            schema: true,
          });
          expect({ op: `${method} ${path}`, created: op.responses['201'] }).toEqual({ op: `${method} ${path}`, created: undefined });
        }
      }
    });

    it('secured operations name both schemes; public ones none', () => {
      const security = (method: string, path: string) =>
        (doc.paths[path][method] as unknown as { security?: Array<Record<string, unknown>> }).security ?? [];
      expect(security('post', '/api/v1/checkout-sessions')).toEqual(expect.arrayContaining([{ apiKey: [] }, { bearer: [] }]));
      expect(security('get', '/api/v1/me')).toEqual(expect.arrayContaining([{ apiKey: [] }, { bearer: [] }]));
      expect(security('get', '/api/v1/fees/quote')).toEqual([]);
    });

    it('GET /docs serves the Swagger UI as HTML', async () => {
      const res = await t.http.get('/docs');
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.text).toMatch(/swagger-ui/i);
    });
  });

  describe('health and metrics', () => {
    it('GET /health/live → 200', async () => {
      const res = await t.http.get('/health/live');
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ status: 'ok' });
    });

    it('GET /health/ready → 200 with database and redis up', async () => {
      const res = await t.http.get('/health/ready');
      expect(res.status).toBe(200);
      expect(res.body.status).toBe('ok');
      expect(res.body.info.database.status).toBe('up');
      expect(res.body.info.redis.status).toBe('up');
    });

    it('GET /metrics exposes http_request_duration_seconds labelled by route template', async () => {
      await t.http.get('/api/v1/checkout-sessions').set('X-Api-Key', org.key);
      await t.http.get(`/api/v1/checkout-sessions/${randomUUID()}`).set('X-Api-Key', org.key);
      // Behind OPERATOR_TOKEN on the api (its development default on chain 31337).
      const res = await t.http.get('/metrics').set('Authorization', `Bearer ${DEV_SECRETS.OPERATOR_TOKEN}`);
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toMatch(/^text\/plain/);
      expect(res.text).toContain('# TYPE http_request_duration_seconds histogram');
      expect(res.text).toMatch(/http_request_duration_seconds_count\{method="GET",route="\/api\/v1\/checkout-sessions",status="200"\} \d+/);
      expect(res.text).toMatch(/http_request_duration_seconds_count\{method="GET",route="\/api\/v1\/checkout-sessions\/:id",status="404"\} \d+/);
      expect(res.text).not.toMatch(/route="\/api\/v1\/checkout-sessions\/[0-9a-f]{8}-/);
    });
  });
});
