import type { INestApplicationContext, Type } from '@nestjs/common';
import { ModulesContainer, NestFactory } from '@nestjs/core';
import { CliModule } from '../../src/cli.module';
import { HealthController } from '../../src/transports/health/health.controller';
import { createTestApp, TestApp } from '../support/app';
import { createOrg, TestOrg } from '../support/factories';
import { isolatedWebhookEnv, IsolatedEnv, startTestWorker, TestWorker } from '../support/webhook-env';

jest.setTimeout(120_000);

const OPERATOR_TOKEN = 'test-operator-token-0123456789';

/**
 * The api's routes, each as a client would call it; none of them belongs on the worker's port.
 * `CS` stands for a real checkout session's id, so a mounted route could not answer 404 for it.
 */
const API_ROUTES: Array<[method: 'get' | 'post' | 'put', path: string, body: object | undefined]> = [
  ['get', '/api/v1/fees/quote?amount=10.00', undefined],
  ['get', '/api/v1/checkout-sessions', undefined],
  ['post', '/api/v1/checkout-sessions', { amount: '1.00', description: 'x' }],
  ['get', '/api/v1/checkout-sessions/CS', undefined],
  ['get', '/api/v1/checkout-sessions/CS/funding-terms', undefined],
  ['get', '/api/v1/escrows', undefined],
  ['post', '/api/v1/escrows/0190a1f0-0000-7000-8000-000000000000/release', {}],
  ['get', '/api/v1/webhook-endpoints', undefined],
  ['put', '/api/v1/webhook-endpoints', { url: 'https://example.com/hook' }],
  ['get', '/api/v1/webhook-deliveries', undefined],
  ['get', '/api/v1/me', undefined],
  ['post', '/oauth/token', { grant_type: 'client_credentials' }],
  ['get', '/checkout/CS', undefined],
];

/** Every controller class registered in an application, by name. */
function controllerNames(app: INestApplicationContext): string[] {
  const names: string[] = [];
  for (const mod of app.get(ModulesContainer).values()) for (const c of mod.controllers.values()) names.push((c.metatype as Type).name);
  return names.sort();
}

/**
 * Each process mounts only the routes it serves (docs/architecture.md §1; transports in their own
 * Nest modules): the worker's port answers health, metrics and Bull Board and nothing of the api,
 * so no route is ever served without the api's guards, validation and rate limit.
 */
describe('routes per process', () => {
  describe('the worker over real HTTP', () => {
    let iso: IsolatedEnv;
    let api: TestApp;
    let worker: TestWorker;
    let org: TestOrg;
    let base: string;
    let checkoutId: string;

    beforeAll(async () => {
      iso = await isolatedWebhookEnv('routes');
      api = await createTestApp(iso.env);
      org = await createOrg(api.app, { payoutAddress: '0x' + '22'.repeat(20) });
      const checkout = await api.http.post('/api/v1/checkout-sessions').set('X-Api-Key', org.key).send({ amount: '1.00', description: 'routes' });
      expect(checkout.status).toBe(200);
      checkoutId = checkout.body.id as string;
      worker = await startTestWorker({ ...iso.env, OPERATOR_TOKEN });
      base = `http://127.0.0.1:${worker.port}`;
    });
    afterAll(async () => {
      await worker?.close();
      await api?.close();
      await iso?.drop();
    });

    const call = (method: string, path: string, body?: object, headers: Record<string, string> = {}) =>
      fetch(base + path.replace('CS', checkoutId), {
        method: method.toUpperCase(),
        headers: { ...headers, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
        signal: AbortSignal.timeout(10_000),
      });

    /** The answer for a path no controller serves (a controller's own 404 names what it did not find). */
    async function expectNoRoute(res: Response) {
      expect({ status: res.status, body: await res.json() }).toEqual({
        status: 404,
        body: { error: 'No such route', code: 'not_found', requestId: expect.any(String) },
      });
    }

    it.each(API_ROUTES)('%s %s → 404 no such route, without a key', async (method, path, body) => {
      await expectNoRoute(await call(method, path, body));
    });

    it.each(API_ROUTES)('%s %s → 404 no such route, with a valid merchant key', async (method, path, body) => {
      await expectNoRoute(await call(method, path, body, { 'X-Api-Key': org.key }));
    });

    it('the api itself serves those routes (the 404s above are the worker, not the paths)', async () => {
      const quote = await api.http.get('/api/v1/fees/quote?amount=10.00').set('X-Api-Key', org.key);
      expect(quote.status).toBe(200);
      expect(quote.body).toMatchObject({ grossAmount: '10.00', netAmount: '10.00', feeAmount: '0.00', bps: 0 });
      expect((await api.http.get('/api/v1/me').set('X-Api-Key', org.key)).status).toBe(200);
      expect((await api.http.get(`/api/v1/checkout-sessions/${checkoutId}`).set('X-Api-Key', org.key)).status).toBe(200);
      expect((await api.http.get(`/api/v1/checkout-sessions/${checkoutId}/funding-terms`)).status).toBe(200);
      expect((await api.http.get(`/checkout/${checkoutId}`)).status).toBe(200);
      expect((await api.http.get('/api/v1/checkout-sessions')).status).toBe(401);
    });

    it('still serves /health/live, /health/serving, /health/ready and /metrics', async () => {
      const live = await call('get', '/health/live');
      expect(live.status).toBe(200);
      expect(await live.json()).toEqual({ status: 'ok' });
      // The worker's readiness probe (deploy/kubernetes/worker.yaml): PostgreSQL and Redis only.
      const serving = await call('get', '/health/serving');
      expect(serving.status).toBe(200);
      expect(Object.keys((await serving.json()).info).sort()).toEqual(['database', 'redis']);
      const ready = await call('get', '/health/ready');
      expect(ready.status).toBe(200);
      expect(await ready.json()).toMatchObject({ status: 'ok', info: { database: { status: 'up' }, redis: { status: 'up' } } });
      const metrics = await call('get', '/metrics');
      expect(metrics.status).toBe(200);
      expect(metrics.headers.get('content-type')).toMatch(/^text\/plain/);
      expect(await metrics.text()).toMatch(/^# HELP /m);
    });

    it('serves Bull Board behind the operator token', async () => {
      expect((await call('get', '/admin/queues')).status).toBe(401);
      expect((await call('get', '/admin/queues', undefined, { Authorization: `Bearer ${OPERATOR_TOKEN}` })).status).toBe(200);
    });

    it('registers no controller but health', () => {
      expect(controllerNames(worker.app)).toEqual([HealthController.name]);
    });
  });

  describe("the worker's operator pages under the failed-authentication allowance", () => {
    let iso: IsolatedEnv;
    let worker: TestWorker;
    beforeAll(async () => {
      iso = await isolatedWebhookEnv('operator');
      worker = await startTestWorker({ ...iso.env, OPERATOR_TOKEN, AUTH_FAILURES_PER_MINUTE: '3' });
    });
    afterAll(async () => {
      await worker?.close();
      await iso?.drop();
    });
    const board = (authorization?: string) =>
      fetch(`http://127.0.0.1:${worker.port}/admin/queues`, { headers: authorization ? { authorization } : {}, signal: AbortSignal.timeout(10_000) });

    it('takes the token as a Basic password, then counts wrong tokens and refuses the address with 429 once they are spent', async () => {
      const basic = await board(`Basic ${Buffer.from(`ops:${OPERATOR_TOKEN}`).toString('base64')}`);
      expect(basic.status).toBe(200);
      for (let i = 0; i < 3; i++) {
        const wrong = await board('Bearer wrong-token');
        expect(wrong.status).toBe(401);
        expect(wrong.headers.get('www-authenticate')).toMatch(/^Basic /);
        expect(await wrong.json()).toEqual({ error: expect.stringMatching(/OPERATOR_TOKEN/), code: 'unauthorized', requestId: expect.any(String) });
      }
      const limited = await board(`Bearer ${OPERATOR_TOKEN}`);
      expect(limited.status).toBe(429);
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(await limited.json()).toMatchObject({ code: 'rate_limited' });
    });
  });

  it('the CLI mounts no controllers', async () => {
    const app = await NestFactory.createApplicationContext(CliModule.forCommand([]), { logger: false });
    try {
      expect(controllerNames(app)).toEqual([]);
    } finally {
      await app.close();
    }
  });

  it('the api registers every feature controller (so the short lists above are not a blind lookup)', async () => {
    const t = await createTestApp();
    try {
      const names = controllerNames(t.app);
      for (const c of ['HealthController', 'FeesController', 'CheckoutController', 'EscrowController', 'WebhookEndpointsController', 'MeController', 'OAuthController', 'PayPageController']) {
        expect(names).toContain(c);
      }
    } finally {
      await t.close();
    }
  });
});
