import { getQueueToken } from '@nestjs/bullmq';
import type { Queue } from 'bullmq';
import { Webhook } from 'standardwebhooks';
import { TransactionHost, TxHost } from '../../src/database/transaction';
import { EventsService } from '../../src/common/outbox/events.service';
import { WebhookEvent } from '../../src/common/outbox/webhook-event';
import { HostResolver, ResolvedAddress } from '../../src/modules/webhooks/webhook-url.service';
import { WEBHOOK_DELIVERY_QUEUE } from '../../src/modules/webhooks/webhooks.queue';
import { createTestApp, TestApp, truncateAll } from '../support/app';
import { createOrg, TestOrg } from '../support/factories';
import { waitFor } from '../support/wait';
import { deliveryRows, emitEvents, isolatedWebhookEnv, IsolatedEnv, startTestWorker, TestWorker } from '../support/webhook-env';
import { WebhookReceiver } from '../support/webhook-receiver';

jest.setTimeout(120_000);

const OPERATOR_TOKEN = 'test-operator-token-0123456789';

describe('webhook delivery through the real worker (Postgres, Redis, BullMQ, local receivers)', () => {
  let iso: IsolatedEnv;
  let api: TestApp;
  let worker: TestWorker | null = null;
  const receivers: WebhookReceiver[] = [];

  const receiver = async (secrets: string[] = []) => {
    const r = await WebhookReceiver.start({ secrets });
    receivers.push(r);
    return r;
  };

  /** An organisation whose endpoint points at `url`; returns its secret (shown once, at creation). */
  async function orgWithEndpoint(url: string): Promise<TestOrg & { secret: string }> {
    const org = await createOrg(api.app);
    const res = await api.http.put('/api/v1/webhook-endpoints').set('X-Api-Key', org.key).send({ url });
    expect(res.status).toBe(200);
    return { ...org, secret: res.body.secret as string };
  }

  const rows = (orgId: string) => deliveryRows(api.dataSource, orgId);
  const allSettled = (orgId: string, n: number) => async () => {
    const r = await rows(orgId);
    return r.length === n && r.every((d) => d.status === 'succeeded' || d.status === 'failed') ? r : null;
  };

  async function restartWorker(env: Record<string, string> = {}, overrides: Array<{ provide: unknown; useValue: unknown }> = []) {
    await worker?.close();
    worker = null;
    await truncateAll(api.dataSource);
    await iso.flushRedis();
    worker = await startTestWorker({ ...iso.env, WEBHOOK_RECOVERY_INTERVAL_MS: '1000', OPERATOR_TOKEN, ...env }, overrides);
  }

  beforeAll(async () => {
    iso = await isolatedWebhookEnv('whdel');
    api = await createTestApp(iso.env);
  });

  afterAll(async () => {
    await worker?.close();
    await api?.close();
    for (const r of receivers) await r.close();
    await iso?.drop();
  });

  describe('with WEBHOOK_RETRY_SCALE=0.001', () => {
    beforeAll(() => restartWorker());

    it('delivers each event once per target, signed, with its type and data; checkout.paid accompanies checkout.released', async () => {
      const endpointReceiver = await receiver();
      const checkoutReceiver = await receiver();
      const org = await orgWithEndpoint(endpointReceiver.url('/org-hook'));
      endpointReceiver.secrets = [org.secret];
      checkoutReceiver.secrets = [org.secret];
      const checkout = await api.http
        .post('/api/v1/checkout-sessions')
        .set('X-Api-Key', org.key)
        .send({ amount: '12.50', description: 'webhook test', webhookUrl: checkoutReceiver.url('/checkout-hook') });
      expect(checkout.status).toBe(200);
      const object = checkout.body as Record<string, unknown>;
      const ids = await emitEvents(api.app, org.organizationId, [
        { type: WebhookEvent.CheckoutFunded, object: { ...object, status: 'funded' }, extraTargetUrl: checkoutReceiver.url('/checkout-hook') },
        { type: WebhookEvent.CheckoutReleased, object: { ...object, status: 'released' }, extraTargetUrl: checkoutReceiver.url('/checkout-hook') },
        { type: WebhookEvent.CheckoutAccepted, object: { id: 'not-a-checkout', status: 'accepted' } },
      ]);
      expect(ids).toHaveLength(4);

      const settled = await waitFor(allSettled(org.organizationId, 7), { label: '7 deliveries settled', describe: () => rows(org.organizationId) });
      expect(settled.every((d) => d.status === 'succeeded' && d.attempts === 1 && d.response_status === 200)).toBe(true);

      const atEndpoint = endpointReceiver.byWebhookId();
      const atCheckout = checkoutReceiver.byWebhookId();
      expect([...atEndpoint.keys()].sort()).toEqual([...ids].sort());
      expect([...atEndpoint.values()].every((list) => list.length === 1)).toBe(true);
      expect(atCheckout.size).toBe(3);
      expect([...atCheckout.values()].every((list) => list.length === 1)).toBe(true);
      for (const d of [...endpointReceiver.received, ...checkoutReceiver.received]) {
        expect(d.verifiedWith).toEqual([0]);
        expect(d.body!.id).toBe(d.webhookId);
        expect(d.headers['content-type']).toBe('application/json');
        expect(new Date(d.body!.createdAt).toISOString()).toBe(d.body!.createdAt);
      }
      const byType = new Map(endpointReceiver.received.map((d) => [d.body!.type, d.body!]));
      expect([...byType.keys()].sort()).toEqual(['checkout.accepted', 'checkout.funded', 'checkout.paid', 'checkout.released']);
      expect(byType.get('checkout.funded')!.data.object).toEqual({ ...object, status: 'funded' });
      expect(byType.get('checkout.paid')!.data).toEqual(byType.get('checkout.released')!.data);
      expect(byType.get('checkout.paid')!.id).not.toBe(byType.get('checkout.released')!.id);
      expect(checkoutReceiver.received.map((d) => d.body!.type).sort()).toEqual(['checkout.funded', 'checkout.paid', 'checkout.released']);
      expect(checkoutReceiver.received.every((d) => d.path === '/checkout-hook')).toBe(true);
    });

    it("the outbox LISTEN connection comes back after Postgres drops it (pg-listen reconnects and LISTENs again); later commits are delivered", async () => {
      const listeners = async (): Promise<number[]> =>
        (await api.dataSource.query(`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'outbox-listen'`)).map((r: { pid: number }) => r.pid);
      const [first] = await waitFor(async () => ((await listeners()).length ? listeners() : null), { label: "the worker's LISTEN connection" });
      await api.dataSource.query('SELECT pg_terminate_backend($1)', [first]);
      const again = await waitFor(async () => ((await listeners()).some((pid) => pid !== first) ? listeners() : null), { timeoutMs: 30_000, label: 'a new LISTEN connection' });
      expect(again).not.toContain(first);
      const r = await receiver();
      const org = await orgWithEndpoint(r.url('/after-drop'));
      const [id] = await emitEvents(api.app, org.organizationId, [{ type: WebhookEvent.CheckoutFunded, object: { id: 'after-drop', status: 'funded' } }]);
      await waitFor(allSettled(org.organizationId, 1), { label: 'the delivery after the reconnect' });
      expect([...r.byWebhookId().keys()]).toEqual([id]);
    });

    it('signatures fail verification for a tampered body and for a timestamp 301 s old', async () => {
      const r = await receiver();
      const org = await orgWithEndpoint(r.url());
      r.secrets = [org.secret];
      await emitEvents(api.app, org.organizationId, [{ type: WebhookEvent.CheckoutFunded, object: { id: 'c-1', amount: '1.00' } }]);
      const d = (await waitFor(() => r.received[0], { label: 'a delivery' }))!;
      const wh = new Webhook(org.secret);
      expect(wh.verify(d.rawBody, d.headers)).toEqual(JSON.parse(d.rawBody));
      const tampered = d.rawBody.replace('"1.00"', '"9.00"');
      expect(tampered).not.toBe(d.rawBody);
      expect(() => wh.verify(tampered, d.headers)).toThrow('No matching signature found');
      const oldAt = new Date((Number(d.timestamp) - 301) * 1000);
      const oldHeaders = { ...d.headers, 'webhook-timestamp': String(Math.floor(oldAt.getTime() / 1000)), 'webhook-signature': wh.sign(d.webhookId, oldAt, d.rawBody) };
      expect(() => wh.verify(d.rawBody, oldHeaders)).toThrow('Message timestamp too old');
      expect(() => wh.verify(d.rawBody, { ...d.headers, 'webhook-timestamp': oldHeaders['webhook-timestamp'] })).toThrow();
    });

    it('retries a receiver that answers 500 then 200 on the scaled schedule, then succeeds with attempts counted', async () => {
      const r = await receiver();
      r.respond = (_d, nth) => (nth <= 2 ? { status: 500, body: 'temporarily broken' } : 200);
      const org = await orgWithEndpoint(r.url());
      r.secrets = [org.secret];
      const [eventId] = await emitEvents(api.app, org.organizationId, [{ type: WebhookEvent.CheckoutFunded, object: { id: 'c-2' } }]);
      const [row] = await waitFor(allSettled(org.organizationId, 1), { label: 'delivery settled', describe: () => rows(org.organizationId) });
      expect(row).toMatchObject({ status: 'succeeded', attempts: 3, response_status: 200, last_error: null });
      expect(r.received.map((d) => d.answeredStatus)).toEqual([500, 500, 200]);
      expect(r.received.every((d) => d.webhookId === eventId && d.verifiedWith.length === 1)).toBe(true);
      const gaps = r.received.slice(1).map((d, i) => d.receivedAt - r.received[i].receivedAt);
      expect(gaps[0]).toBeGreaterThanOrEqual(5 * 1000 * 0.001);
      expect(gaps[1]).toBeGreaterThanOrEqual(300 * 1000 * 0.001);
      const list = await api.http.get('/api/v1/webhook-deliveries').set('X-Api-Key', org.key);
      expect(list.body.data[0]).toMatchObject({ eventId, status: 'succeeded', attempts: 3, responseStatus: 200 });
    });

    it('records a failing attempt with its status, a body snippet and the next attempt time', async () => {
      const r = await receiver();
      let broken = true;
      r.respond = () => (broken ? { status: 503, body: 'x'.repeat(10_000) } : 200);
      const org = await orgWithEndpoint(r.url());
      await emitEvents(api.app, org.organizationId, [{ type: WebhookEvent.CheckoutFunded, object: { id: 'c-3' } }]);
      const list = await waitFor(async () => {
        const res = await api.http.get('/api/v1/webhook-deliveries').set('X-Api-Key', org.key);
        const d = res.body.data[0];
        return d && d.status === 'retrying' && d.attempts === 3 ? d : null;
      });
      expect(list).toMatchObject({ responseStatus: 503, lastError: 'HTTP 503' });
      expect(list.responseBody).toBe('x'.repeat(4096));
      const wait = new Date(list.nextAttemptAt).getTime() - new Date(list.lastAttemptAt).getTime();
      expect(wait).toBeGreaterThanOrEqual(1800 * 1000 * 0.001);
      const queue = worker!.app.get<Queue>(getQueueToken(WEBHOOK_DELIVERY_QUEUE));
      expect(await queue.getJobState(`${list.id}_3`)).toBe('delayed');
      broken = false;
      await waitFor(allSettled(org.organizationId, 1), { label: 'delivery settled' });
    });

    it('a 410 Gone holds the delivery and disables the endpoint; PUT enabled=true re-enables it', async () => {
      const r = await receiver();
      r.respond = () => 410;
      const org = await orgWithEndpoint(r.url());
      await emitEvents(api.app, org.organizationId, [{ type: WebhookEvent.CheckoutFunded, object: { id: 'c-4' } }]);
      const [row] = await waitFor(async () => {
        const list = await rows(org.organizationId);
        return list[0]?.attempts === 1 ? list : null;
      }, { label: 'the 410 recorded' });
      expect(row).toMatchObject({ status: 'held', attempts: 1, response_status: 410, next_attempt_at: null });
      const endpoint = await api.http.get('/api/v1/webhook-endpoints').set('X-Api-Key', org.key);
      expect(endpoint.body).toMatchObject({ enabled: false, disabledReason: 'gone' });
      const retry = await api.http.post(`/api/v1/webhook-deliveries/${row.id}/retry`).set('X-Api-Key', org.key);
      expect(retry.status).toBe(409);
      expect(retry.body.details).toMatchObject({ reason: 'endpoint_disabled' });
      await emitEvents(api.app, org.organizationId, [{ type: WebhookEvent.CheckoutAccepted, object: { id: 'c-4' } }]);
      await waitFor(async () => (await api.dataSource.query(`SELECT 1 FROM outbox_events WHERE organization_id = $1 AND relayed_at IS NULL`, [org.organizationId])).length === 0);
      expect((await rows(org.organizationId)).map((d) => d.status)).toEqual(['held', 'held']);
      expect(r.received).toHaveLength(1);
      r.respond = () => 200;
      const again = await api.http.put('/api/v1/webhook-endpoints').set('X-Api-Key', org.key).send({ url: r.url(), enabled: true });
      expect(again.body).toMatchObject({ enabled: true, disabledReason: null });
      expect(again.body.secret).toBeUndefined();
      await waitFor(allSettled(org.organizationId, 2), { label: 'held deliveries sent after re-enabling' });
      expect(r.received.map((d) => d.answeredStatus)).toEqual([410, 200, 200]);
    });

    it('does not follow redirects: a 3xx is a failed attempt and the redirect target is never called', async () => {
      const r = await receiver();
      const target = await receiver();
      r.respond = (_d, nth) => (nth === 1 ? { status: 302, headers: { location: target.url('/stolen') } } : nth === 2 ? { status: 307, headers: { location: 'http://169.254.169.254/latest/meta-data' } } : 200);
      const org = await orgWithEndpoint(r.url());
      await emitEvents(api.app, org.organizationId, [{ type: WebhookEvent.CheckoutFunded, object: { id: 'c-5' } }]);
      const [row] = await waitFor(allSettled(org.organizationId, 1), { label: 'delivery settled' });
      expect(row).toMatchObject({ status: 'succeeded', attempts: 3 });
      expect(r.received.map((d) => d.answeredStatus)).toEqual([302, 307, 200]);
      expect(target.received).toHaveLength(0);
    });

    it('outbox atomicity: a transaction that emits and then rolls back leaves no event, so nothing is delivered', async () => {
      const r = await receiver();
      const org = await orgWithEndpoint(r.url());
      const txHost = api.app.get(TransactionHost) as TxHost;
      const events = api.app.get(EventsService);
      await expect(
        txHost.withTransaction(async () => {
          await events.emit(org.organizationId, WebhookEvent.CheckoutReleased, { id: 'rolled-back' });
          throw new Error('state change failed after the event was written');
        }),
      ).rejects.toThrow('state change failed');
      const left = await api.dataSource.query(`SELECT id FROM outbox_events WHERE organization_id = $1`, [org.organizationId]);
      expect(left).toHaveLength(0);
      const [marker] = await emitEvents(api.app, org.organizationId, [{ type: WebhookEvent.CheckoutFunded, object: { id: 'committed' } }]);
      await waitFor(() => r.received.some((d) => d.webhookId === marker), { label: 'the committed event' });
      await waitFor(allSettled(org.organizationId, 1), { label: 'delivery settled' });
      expect(r.received.map((d) => d.body!.data.object.id)).toEqual(['committed']);
    });

    it('an endpoint events filter limits what the organisation endpoint receives', async () => {
      const r = await receiver();
      const org = await createOrg(api.app);
      await api.http.put('/api/v1/webhook-endpoints').set('X-Api-Key', org.key).send({ url: r.url(), events: ['checkout.paid'] }).expect(200);
      await emitEvents(api.app, org.organizationId, [
        { type: WebhookEvent.CheckoutFunded, object: { id: 'f' } },
        { type: WebhookEvent.CheckoutReleased, object: { id: 'r' } },
      ]);
      await waitFor(allSettled(org.organizationId, 1), { label: 'one delivery' });
      expect(r.received.map((d) => d.body!.type)).toEqual(['checkout.paid']);
    });

    it("records a checkout webhookUrl delivery as failed while the organisation has no signing secret; after PUT a manual retry delivers it", async () => {
      const r = await receiver();
      const org = await createOrg(api.app);
      const [eventId] = await emitEvents(api.app, org.organizationId, [{ type: WebhookEvent.CheckoutFunded, object: { id: 'c-9' }, extraTargetUrl: r.url('/own') }]);
      const [row] = await waitFor(allSettled(org.organizationId, 1), { label: 'delivery recorded' });
      expect(row).toMatchObject({ status: 'failed', attempts: 0, url: r.url('/own') });
      expect(row.last_error).toMatch(/no webhook endpoint/);
      expect(r.received).toHaveLength(0);

      const other = await receiver();
      const put = await api.http.put('/api/v1/webhook-endpoints').set('X-Api-Key', org.key).send({ url: other.url() });
      r.secrets = [put.body.secret as string];
      await api.http.post(`/api/v1/webhook-deliveries/${row.id}/retry`).set('X-Api-Key', org.key).expect(200);
      await waitFor(async () => (await rows(org.organizationId))[0].status === 'succeeded', { label: 'retried delivery' });
      expect(r.received.map((d) => [d.webhookId, d.verifiedWith])).toEqual([[eventId, [0]]]);
      expect(other.received).toHaveLength(0);
    });

    it('the worker port serves health, Prometheus metrics and Bull Board behind OPERATOR_TOKEN', async () => {
      const r = await receiver();
      r.respond = (_d, nth) => (nth === 1 ? 500 : 200);
      const org = await orgWithEndpoint(r.url());
      await emitEvents(api.app, org.organizationId, [{ type: WebhookEvent.CheckoutFunded, object: { id: 'c-m' } }]);
      await waitFor(allSettled(org.organizationId, 1), { label: 'delivery settled' });
      const base = `http://127.0.0.1:${worker!.port}`;
      const ready = await fetch(`${base}/health/ready`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toMatchObject({ status: 'ok', info: { database: { status: 'up' }, redis: { status: 'up' } } });
      const metrics = await (await fetch(`${base}/metrics`)).text();
      expect(metrics).toMatch(/^webhook_delivery_attempts_total\{outcome="success"\} [1-9]\d*$/m);
      expect(metrics).toMatch(/^webhook_delivery_attempts_total\{outcome="http"\} [1-9]\d*$/m);
      expect(metrics).toMatch(/^webhook_queue_depth\{state="waiting"\} \d+$/m);
      expect(metrics).toMatch(/^webhook_event_delivery_latency_seconds_count [1-9]\d*$/m);
      expect(metrics).toMatch(/^webhook_delivery_attempt_seconds_bucket\{le="0.005",outcome="success"\} \d+$/m);

      const anonymous = await fetch(`${base}/admin/queues`);
      expect(anonymous.status).toBe(401);
      expect(anonymous.headers.get('www-authenticate')).toMatch(/^Basic/);
      expect((await fetch(`${base}/admin/queues/api/queues`, { headers: { authorization: 'Bearer wrong-token-0123456789' } })).status).toBe(401);
      const bearer = await fetch(`${base}/admin/queues/api/queues`, { headers: { authorization: `Bearer ${OPERATOR_TOKEN}` } });
      expect(bearer.status).toBe(200);
      expect((await bearer.json()).queues.map((q: { name: string }) => q.name)).toContain('webhook-deliveries');
      const basic = await fetch(`${base}/admin/queues`, { headers: { authorization: `Basic ${Buffer.from(`ops:${OPERATOR_TOKEN}`).toString('base64')}` } });
      expect(basic.status).toBe(200);
      expect(await basic.text()).toContain('<html');
    });
  });

  describe('with WEBHOOK_RETRY_SCALE=0.00001 (the full schedule in about 3 s)', () => {
    beforeAll(() => restartWorker({ WEBHOOK_RETRY_SCALE: '0.00001' }));

    it('a receiver that never succeeds ends failed after 10 attempts; a manual retry then delivers with the same webhook-id', async () => {
      const r = await receiver();
      let up = false;
      r.respond = () => (up ? 200 : 500);
      const org = await orgWithEndpoint(r.url());
      r.secrets = [org.secret];
      const [eventId] = await emitEvents(api.app, org.organizationId, [{ type: WebhookEvent.CheckoutFunded, object: { id: 'c-6' } }]);
      const [failed] = await waitFor(allSettled(org.organizationId, 1), { label: 'delivery failed', describe: () => rows(org.organizationId) });
      expect(failed).toMatchObject({ status: 'failed', attempts: 10, response_status: 500, next_attempt_at: null });
      expect(r.received).toHaveLength(10);

      up = true;
      const retry = await api.http.post(`/api/v1/webhook-deliveries/${failed.id}/retry`).set('X-Api-Key', org.key);
      expect(retry.status).toBe(200);
      expect(retry.body).toMatchObject({ id: failed.id, status: 'pending', attempts: 10 });
      const done = await waitFor(async () => (await rows(org.organizationId)).find((d) => d.status === 'succeeded'), { label: 'manual retry delivered' });
      expect(done).toMatchObject({ attempts: 11, response_status: 200 });
      expect(r.received).toHaveLength(11);
      const last = r.received[10];
      expect(last.webhookId).toBe(eventId);
      expect(last.verifiedWith).toEqual([0]);
      expect(Number(last.timestamp)).toBeGreaterThanOrEqual(Number(r.received[0].timestamp));
    });

    it('during a rotation overlap deliveries verify with the old and with the new secret; a second rotation inside it replaces only the newest', async () => {
      const r = await receiver();
      const org = await orgWithEndpoint(r.url());
      const first = org.secret;
      const rotated = await api.http.put('/api/v1/webhook-endpoints').set('X-Api-Key', org.key).send({ url: r.url(), rotateSecret: true });
      const second = rotated.body.secret as string;
      expect(second).toMatch(/^whsec_/);
      expect(second).not.toBe(first);
      const overlapEnds = new Date(rotated.body.previousSecretExpiresAt).getTime() - Date.now();
      expect(overlapEnds).toBeGreaterThan(23.9 * 3600 * 1000);
      expect(overlapEnds).toBeLessThanOrEqual(24 * 3600 * 1000);

      r.secrets = [first, second];
      const [e1] = await emitEvents(api.app, org.organizationId, [{ type: WebhookEvent.CheckoutFunded, object: { id: 'c-7' } }]);
      const d1 = await waitFor(() => r.received.find((d) => d.webhookId === e1), { label: 'delivery during overlap' });
      expect(d1.signature.split(' ')).toHaveLength(2);
      expect(d1.verifiedWith).toEqual([0, 1]);
      expect(() => new Webhook(first).verify(d1.rawBody, d1.headers)).not.toThrow();
      expect(() => new Webhook(second).verify(d1.rawBody, d1.headers)).not.toThrow();

      const third = (await api.http.put('/api/v1/webhook-endpoints').set('X-Api-Key', org.key).send({ url: r.url(), rotateSecret: true })).body.secret as string;
      r.secrets = [first, second, third];
      const [e2] = await emitEvents(api.app, org.organizationId, [{ type: WebhookEvent.CheckoutAccepted, object: { id: 'c-7' } }]);
      const d2 = await waitFor(() => r.received.find((d) => d.webhookId === e2), { label: 'delivery after second rotation' });
      expect(d2.verifiedWith).toEqual([0, 2]);
    });
  });

  describe('with WEBHOOK_ALLOW_PRIVATE=false in the worker (checked again at connect time)', () => {
    class RebindingResolver extends HostResolver {
      async resolve(hostname: string): Promise<ResolvedAddress[]> {
        if (hostname === 'rebind.test') return [{ address: '127.0.0.1', family: 4 }];
        throw Object.assign(new Error(`ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
      }
    }
    beforeAll(() => restartWorker({ WEBHOOK_ALLOW_PRIVATE: 'false' }, [{ provide: HostResolver, useValue: new RebindingResolver() }]));

    it('refuses a name that now resolves to a private address (DNS rebinding) and a private literal, sending nothing', async () => {
      const r = await receiver();
      const org = await orgWithEndpoint(`http://rebind.test:${r.port}/hook`);
      await emitEvents(api.app, org.organizationId, [{ type: WebhookEvent.CheckoutFunded, object: { id: 'c-8' }, extraTargetUrl: r.url('/literal') }]);
      const attempted = await waitFor(
        async () => {
          const list = await rows(org.organizationId);
          return list.length === 2 && list.every((d) => d.attempts >= 1) ? list : null;
        },
        { label: 'both deliveries attempted', describe: () => rows(org.organizationId) },
      );
      for (const d of attempted) {
        expect(d.status).toBe('retrying');
        expect(d.response_status).toBeNull();
        expect(d.last_error).toMatch(/^refused: .*private or reserved address \(loopback\)/);
      }
      expect(r.received).toHaveLength(0);
    });
  });
});
