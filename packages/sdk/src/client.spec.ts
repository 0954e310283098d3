import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import {
  AgentRefusalError,
  ApiServerError,
  AuthenticationError,
  ConnectionError,
  IdempotencyError,
  InvalidRequestError,
  NotFoundError,
  Pcp,
  PermissionError,
  RateLimitError,
  WebhookSignatureError,
} from './index';

/** What the local server saw of one request. */
interface Seen {
  method: string;
  url: URL;
  headers: IncomingMessage['headers'];
  body: string;
  at: number;
}
type Handler = (req: Seen, res: ServerResponse, n: number) => void;

/**
 * A real HTTP server on 127.0.0.1 answering with `handler` (the n-th request of the test as
 * `n`, from 0) and recording every request; the client under test talks to it over the network.
 */
function localApi() {
  const seen: Seen[] = [];
  let handler: Handler = (_req, res) => res.end();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const entry = { method: req.method!, url: new URL(req.url!, 'http://x'), headers: req.headers, body: Buffer.concat(chunks).toString(), at: Date.now() };
      seen.push(entry);
      handler(entry, res, seen.length - 1);
    });
  });
  return {
    seen,
    on(h: Handler) {
      handler = h;
      seen.length = 0;
    },
    async start() {
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    },
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { 'content-type': 'application/json', 'x-request-id': 'req_header', ...headers });
  res.end(JSON.stringify(body));
}
const errorBody = (code: string, extra: Record<string, unknown> = {}) => ({ error: `failed: ${code}`, code, requestId: `req_${code}`, ...extra });
const payment = { id: 'p1', status: 'submitted', amount: '5.00' };

describe('Pcp client (thin layer over the generated client, against a local HTTP server)', () => {
  const api = localApi();
  let baseUrl: string;
  let pcp: Pcp;

  beforeAll(async () => {
    baseUrl = await api.start();
    pcp = new Pcp({ baseUrl, credentials: { apiKey: 'bk_agent_live_test' }, retry: { baseDelayMs: 5, maxDelayMs: 2_000 } });
  });
  afterAll(() => api.stop());

  it('adds an Idempotency-Key to a POST that takes one and repeats the same key when it retries a 503', async () => {
    api.on((_req, res, n) => (n < 2 ? json(res, 503, errorBody('unavailable')) : json(res, 200, payment)));
    const out = await pcp.POST('/api/v1/payments', { body: { to: 'acme', amount: '5.00' } });
    expect(out).toEqual(payment);
    expect(api.seen).toHaveLength(3);
    const keys = api.seen.map((r) => r.headers['idempotency-key']);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(new Set(keys).size).toBe(1);
    expect(api.seen.every((r) => r.headers['x-api-key'] === 'bk_agent_live_test' && r.body === '{"to":"acme","amount":"5.00"}')).toBe(true);
  });

  it('keeps the caller\'s key, and uses the body\'s idempotencyKey as the header (checkout create)', async () => {
    api.on((_req, res) => json(res, 200, payment));
    await pcp.POST('/api/v1/payments', { body: { to: 'acme', amount: '5.00' }, params: { header: { 'Idempotency-Key': 'mine-1' } } });
    await pcp.POST('/api/v1/checkout-sessions', { body: { amount: '5.00', description: 'x', idempotencyKey: 'body-key' } });
    expect(api.seen.map((r) => r.headers['idempotency-key'])).toEqual(['mine-1', 'body-key']);
  });

  it('never retries a write without a key: a PUT answered 503 is sent once and throws ApiServerError', async () => {
    api.on((_req, res) => json(res, 503, errorBody('unavailable')));
    const err = await pcp.PUT('/api/v1/webhook-endpoints', { body: { url: 'https://example.com/hook' } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiServerError);
    expect(err).toMatchObject({ status: 503, code: 'unavailable', requestId: 'req_unavailable' });
    expect(api.seen).toHaveLength(1);
    expect(api.seen[0].headers['idempotency-key']).toBeUndefined();
  });

  it('honours Retry-After on 429 before retrying a GET', async () => {
    api.on((_req, res, n) => (n === 0 ? json(res, 429, errorBody('rate_limited'), { 'retry-after': '1' }) : json(res, 200, payment)));
    await expect(pcp.GET('/api/v1/payments/{id}', { params: { path: { id: 'p1' } } })).resolves.toEqual(payment);
    expect(api.seen).toHaveLength(2);
    expect(api.seen[1].at - api.seen[0].at).toBeGreaterThanOrEqual(950);
  });

  it('gives up at once with RateLimitError when Retry-After is beyond maxDelayMs', async () => {
    api.on((_req, res) => json(res, 429, errorBody('rate_limited'), { 'retry-after': '60' }));
    const err = await pcp.GET('/api/v1/payments').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RateLimitError);
    expect((err as RateLimitError).retryAfter).toBe(60);
    expect(api.seen).toHaveLength(1);
  });

  it('retries a GET after a dropped connection, and throws ConnectionError when every attempt fails', async () => {
    api.on((req, res, n) => (n === 0 ? res.socket!.destroy() : json(res, 200, payment)));
    await expect(pcp.GET('/api/v1/payments/{id}', { params: { path: { id: 'p1' } } })).resolves.toEqual(payment);
    expect(api.seen).toHaveLength(2);

    api.on((_req, res) => res.socket!.destroy());
    const err = await pcp.GET('/api/v1/payments/{id}', { params: { path: { id: 'p1' } } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectionError);
    expect(err).toMatchObject({ status: 0, code: 'connection_error' });
    expect(api.seen).toHaveLength(3);
  });

  it('does not retry 500, nor 409/422 idempotency conflicts without Retry-After', async () => {
    api.on((_req, res) => json(res, 500, errorBody('internal')));
    await expect(pcp.GET('/api/v1/payments')).rejects.toBeInstanceOf(ApiServerError);
    expect(api.seen).toHaveLength(1);
    api.on((_req, res) => json(res, 422, errorBody('idempotency_conflict')));
    await expect(pcp.POST('/api/v1/payments', { body: { to: 'acme', amount: '5.00' } })).rejects.toBeInstanceOf(IdempotencyError);
    expect(api.seen).toHaveLength(1);
  });

  it('waits out a 409 in-flight conflict (Retry-After) on a keyed POST', async () => {
    api.on((_req, res, n) => (n === 0 ? json(res, 409, errorBody('idempotency_conflict'), { 'retry-after': '0' }) : json(res, 200, payment)));
    await expect(pcp.POST('/api/v1/payments', { body: { to: 'acme', amount: '5.00' } })).resolves.toEqual(payment);
    expect(api.seen).toHaveLength(2);
    expect(api.seen[0].headers['idempotency-key']).toBe(api.seen[1].headers['idempotency-key']);
  });

  it.each([
    [400, 'invalid_request', InvalidRequestError],
    [400, 'confirm_required', InvalidRequestError],
    [409, 'invalid_request', InvalidRequestError],
    [401, 'unauthorized', AuthenticationError],
    [403, 'missing_scope', PermissionError],
    [403, 'kyb_rejected', PermissionError],
    [404, 'not_found', NotFoundError],
    [403, 'policy_denied', AgentRefusalError],
    [403, 'agents_disabled', AgentRefusalError],
  ] as const)('%i %s → %p with code, requestId, details', async (status, code, Family) => {
    api.on((_req, res) => json(res, status, errorBody(code, { details: { reason: 'r' } })));
    const err = await pcp.GET('/api/v1/payments').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Family);
    expect(err).toMatchObject({ status, code, requestId: `req_${code}`, details: { reason: 'r' }, message: `failed: ${code}` });
  });

  it('an answer that is not our error body still throws, carrying the X-Request-Id header', async () => {
    api.on((_req, res) => {
      res.writeHead(502, { 'content-type': 'text/html', 'x-request-id': 'req_proxy' });
      res.end('<html>bad gateway</html>');
    });
    const err = await pcp.GET('/api/v1/me').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiServerError);
    expect(err).toMatchObject({ status: 502, requestId: 'req_proxy' });
  });

  it('list() pages with starting_after until hasMore is false', async () => {
    const ids = ['e', 'd', 'c', 'b', 'a'];
    api.on((req, res) => {
      const after = req.url.searchParams.get('starting_after');
      const from = after ? ids.indexOf(after) + 1 : 0;
      const data = ids.slice(from, from + Number(req.url.searchParams.get('limit'))).map((id) => ({ id, amount: '1.00' }));
      const hasMore = from + data.length < ids.length;
      json(res, 200, { data, hasMore, nextCursor: hasMore ? data.at(-1)!.id : null });
    });
    const got: string[] = [];
    for await (const p of pcp.list('/api/v1/payments', { params: { query: { limit: 2 } } })) got.push(p.id);
    expect(got).toEqual(ids);
    expect(api.seen.map((r) => r.url.searchParams.get('starting_after'))).toEqual([null, 'd', 'b']);

    const before = api.seen.length;
    const first: string[] = [];
    for await (const p of pcp.list('/api/v1/payments', { params: { query: { limit: 2 } } })) {
      first.push(p.id);
      if (first.length === 3) break;
    }
    expect(api.seen.length - before).toBe(2);
  });

  it('OAuth client credentials: one token shared until it nears expiry, renewed on 401, sent as Bearer', async () => {
    let tokens = 0;
    let expiresIn = 3600;
    api.on((req, res) => {
      if (req.url.pathname === '/oauth/token') {
        expect(JSON.parse(req.body)).toEqual({ grant_type: 'client_credentials', client_id: 'cid', client_secret: 'sec', scope: 'checkout:read' });
        return json(res, 200, { access_token: `bat_${++tokens}`, token_type: 'Bearer', expires_in: expiresIn, scope: 'checkout:read' });
      }
      if (req.headers.authorization === 'Bearer bat_3') return json(res, 401, errorBody('unauthorized'));
      json(res, 200, { data: [], hasMore: false, nextCursor: null });
    });
    const oauth = new Pcp({ baseUrl, credentials: { oauth: { clientId: 'cid', clientSecret: 'sec', scope: 'checkout:read' } } });
    await Promise.all([oauth.GET('/api/v1/checkout-sessions'), oauth.GET('/api/v1/checkout-sessions')]);
    expect(tokens).toBe(1);
    await oauth.GET('/api/v1/checkout-sessions');
    expect(tokens).toBe(1);
    expiresIn = 20; // inside the 30 s renewal margin from the start
    const soon = new Pcp({ baseUrl, credentials: { oauth: { clientId: 'cid', clientSecret: 'sec', scope: 'checkout:read' } } });
    await soon.GET('/api/v1/checkout-sessions'); // bat_2, expires in 20 s
    await soon.GET('/api/v1/checkout-sessions'); // bat_2 is inside the margin → bat_3 (refused 401) → bat_4
    expect(tokens).toBe(4);
    const auths = api.seen.filter((r) => r.url.pathname !== '/oauth/token').map((r) => r.headers.authorization);
    expect(auths).toEqual(['Bearer bat_1', 'Bearer bat_1', 'Bearer bat_1', 'Bearer bat_2', 'Bearer bat_3', 'Bearer bat_4']);
  });

  it('webhooks.verify returns the typed event for a Standard Webhooks signature and refuses a tampered body', () => {
    const secret = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
    const body = JSON.stringify({ id: 'evt_1', type: 'checkout.funded', createdAt: '2026-01-01T00:00:00.000Z', data: { object: { id: 'c1', amount: '12.50' } } });
    const now = new Date();
    const headers = { 'webhook-id': 'evt_1', 'webhook-timestamp': String(Math.floor(now.getTime() / 1000)), 'webhook-signature': new Webhook(secret).sign('evt_1', now, body) };
    const event = pcp.webhooks.verify(body, headers, secret);
    expect(event.type).toBe('checkout.funded');
    expect(event.data.object.amount).toBe('12.50');
    expect(pcp.webhooks.verify(Buffer.from(body), new Headers(headers), secret).id).toBe('evt_1');
    expect(() => pcp.webhooks.verify(body.replace('12.50', '99.50'), headers, secret)).toThrow(WebhookSignatureError);
    expect(() => pcp.webhooks.verify(body, { ...headers, 'webhook-signature': undefined }, secret)).toThrow(WebhookSignatureError);
  });
});
