import { getQueueToken } from '@nestjs/bullmq';
import type { Queue } from 'bullmq';
import { randomUUID } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';
import { WebhookEvent } from '../../src/common/outbox/webhook-event';
import { WEBHOOK_DELIVERY_QUEUE } from '../../src/modules/webhooks/webhooks.queue';
import { createTestApp, TestApp } from '../support/app';
import { expectError, expectInvalidParam } from '../support/errors';
import { createKey, createOrg, TestOrg } from '../support/factories';
import { emitEvents, isolatedWebhookEnv, IsolatedEnv } from '../support/webhook-env';

const ENDPOINT = '/api/v1/webhook-endpoints';
const DELIVERIES = '/api/v1/webhook-deliveries';

/** Webhook endpoints and deliveries API (docs/api.md Events 3–4, docs/architecture.md §6, §8). No worker runs here. */
describe('webhook endpoints and deliveries API', () => {
  let iso: IsolatedEnv;
  let t: TestApp;

  beforeAll(async () => {
    iso = await isolatedWebhookEnv('whapi');
    t = await createTestApp(iso.env);
  });
  afterAll(async () => {
    await t?.close();
    await iso?.drop();
  });

  const put = (org: TestOrg, body: object) => t.http.put(ENDPOINT).set('X-Api-Key', org.key).send(body);
  const get = (org: TestOrg) => t.http.get(ENDPOINT).set('X-Api-Key', org.key);

  describe('endpoint', () => {
    it('shows the whsec_ secret only on creation and on rotation, and stores it encrypted', async () => {
      const org = await createOrg(t.app);
      expectError(await get(org), 404, 'not_found');

      const created = await put(org, { url: 'http://127.0.0.1:9/hook' });
      expect(created.status).toBe(200);
      expect(created.body).toMatchObject({ url: 'http://127.0.0.1:9/hook', enabled: true, events: null, disabledReason: null, previousSecretExpiresAt: null });
      const first = created.body.secret as string;
      expect(first).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);

      const read = await get(org);
      expect(read.status).toBe(200);
      expect(read.body.id).toBe(created.body.id);
      expect(read.body).not.toHaveProperty('secret');

      const updated = await put(org, { url: 'http://127.0.0.1:9/other', events: ['checkout.funded', 'checkout.paid'] });
      expect(updated.status).toBe(200);
      expect(updated.body).not.toHaveProperty('secret');
      expect(updated.body).toMatchObject({ id: created.body.id, url: 'http://127.0.0.1:9/other', events: ['checkout.funded', 'checkout.paid'] });

      const rotated = await put(org, { url: 'http://127.0.0.1:9/other', rotateSecret: true });
      expect(rotated.body.secret).toMatch(/^whsec_/);
      expect(rotated.body.secret).not.toBe(first);
      expect(rotated.body.events).toBeNull();
      expect(Date.parse(rotated.body.previousSecretExpiresAt) - Date.now()).toBeGreaterThan(23 * 3600_000);
      expect((await get(org)).body).not.toHaveProperty('secret');

      const [stored] = await t.dataSource.query(`SELECT secret_sealed, previous_secret_sealed FROM webhook_endpoints WHERE organization_id = $1`, [org.organizationId]);
      const text = JSON.stringify(stored);
      for (const secret of [first, rotated.body.secret as string]) {
        expect(text).not.toContain(secret);
        expect(text).not.toContain(secret.slice(6));
      }
    });

    it('enabled=false disables; enabled=true enables again', async () => {
      const org = await createOrg(t.app);
      await put(org, { url: 'http://127.0.0.1:9/hook' }).expect(200);
      expect((await put(org, { url: 'http://127.0.0.1:9/hook', enabled: false })).body).toMatchObject({ enabled: false, disabledReason: 'disabled_by_merchant' });
      expect((await put(org, { url: 'http://127.0.0.1:9/hook', enabled: true })).body).toMatchObject({ enabled: true, disabledReason: null });
    });

    it.each([
      [{}, 'url'],
      [{ url: 'not a url' }, 'url'],
      [{ url: 'ftp://example.com/hook' }, 'url'],
      [{ url: 'https://example.com/' + 'a'.repeat(2100) }, 'url'],
      [{ url: 'https://example.com/h', events: ['checkout.nope'] }, 'events'],
      [{ url: 'https://example.com/h', events: [] }, 'events'],
      [{ url: 'https://example.com/h', events: ['checkout.paid', 'checkout.paid'] }, 'events'],
      [{ url: 'https://example.com/h', events: 'checkout.paid' }, 'events'],
      [{ url: 'https://example.com/h', enabled: 'yes' }, 'enabled'],
      [{ url: 'https://example.com/h', rotateSecret: 'true' }, 'rotateSecret'],
      [{ url: 'https://example.com/h', secret: 'whsec_mine' }, 'secret'],
    ])('rejects %j naming %s', async (body, param) => {
      const org = await createOrg(t.app);
      const res = await put(org, body);
      if (param === 'secret') expectError(res, 400, 'invalid_request');
      else expectInvalidParam(res, param);
      expectError(await get(org), 404, 'not_found');
    });

    it('needs webhooks:read to read and webhooks:write to change', async () => {
      const org = await createOrg(t.app);
      await put(org, { url: 'http://127.0.0.1:9/hook' }).expect(200);
      const reader = await createKey(t.app, org.organizationId, ['webhooks:read']);
      const other = await createKey(t.app, org.organizationId, ['checkout:read']);
      expect((await t.http.get(ENDPOINT).set('X-Api-Key', reader)).status).toBe(200);
      const denied = expectError(await t.http.put(ENDPOINT).set('X-Api-Key', reader).send({ url: 'http://127.0.0.1:9/x' }), 403, 'missing_scope');
      expect(denied?.required).toEqual(['webhooks:write']);
      expectError(await t.http.get(ENDPOINT).set('X-Api-Key', other), 403, 'missing_scope');
      expectError(await t.http.get(DELIVERIES).set('X-Api-Key', other), 403, 'missing_scope');
      expectError(await t.http.post(`${DELIVERIES}/${randomUUID()}/retry`).set('X-Api-Key', reader), 403, 'missing_scope');
      expectError(await t.http.get(ENDPOINT), 401, 'unauthorized');
    });
  });

  describe('deliveries', () => {
    let org: TestOrg;
    let otherOrg: TestOrg;
    const seeded: Array<{ id: string; status: string; eventType: string }> = [];

    /** 25 deliveries with known statuses and types (rows written as the relay and worker would). */
    beforeAll(async () => {
      org = await createOrg(t.app);
      otherOrg = await createOrg(t.app);
      await put(org, { url: 'http://127.0.0.1:9/hook' }).expect(200);
      const statuses = ['succeeded', 'failed', 'retrying', 'pending', 'succeeded'];
      const types = [WebhookEvent.CheckoutFunded, WebhookEvent.CheckoutPaid, WebhookEvent.CheckoutAccepted];
      for (let i = 0; i < 25; i++) {
        const [eventId] = await emitEvents(t.app, org.organizationId, [{ type: types[i % 3], object: { n: i } }]);
        const row = { id: uuidv7(), status: statuses[i % 5], eventType: types[i % 3] };
        await t.dataSource.query(
          `INSERT INTO webhook_deliveries (id, event_id, organization_id, event_type, target, url, status, attempts, response_status, created_at)
           VALUES ($1, $2, $3, $4, 'endpoint', 'http://127.0.0.1:9/hook', $5, $6, $7, now() - ($8 || ' seconds')::interval)`,
          [row.id, eventId, org.organizationId, row.eventType, row.status, row.status === 'pending' ? 0 : 1, row.status === 'succeeded' ? 200 : null, 100 - i],
        );
        seeded.push(row);
      }
      const [foreignEvent] = await emitEvents(t.app, otherOrg.organizationId, [{ type: WebhookEvent.CheckoutFunded, object: {} }]);
      await t.dataSource.query(
        `INSERT INTO webhook_deliveries (id, event_id, organization_id, event_type, target, url, status) VALUES ($1, $2, $3, 'checkout.funded', 'checkout', 'http://127.0.0.1:9/x', 'failed')`,
        [uuidv7(), foreignEvent, otherOrg.organizationId],
      );
    });

    const list = (query: Record<string, string | number> = {}, key = org.key) => t.http.get(DELIVERIES).query(query).set('X-Api-Key', key);

    it('pages newest first with the checkout list envelope and cursor', async () => {
      const newestFirst = [...seeded].reverse().map((s) => s.id);
      const seen: string[] = [];
      let cursor: string | null = null;
      const sizes: number[] = [];
      do {
        const res = await list({ limit: 10, ...(cursor ? { starting_after: cursor } : {}) });
        expect(res.status).toBe(200);
        expect(Object.keys(res.body).sort()).toEqual(['data', 'hasMore', 'nextCursor']);
        sizes.push(res.body.data.length);
        seen.push(...res.body.data.map((d: { id: string }) => d.id));
        cursor = res.body.nextCursor;
        expect(res.body.hasMore).toBe(cursor !== null);
      } while (cursor);
      expect(sizes).toEqual([10, 10, 5]);
      expect(seen).toEqual(newestFirst);
      const first = (await list({ limit: 1 })).body.data[0];
      expect(Object.keys(first).sort()).toEqual(
        ['attempts', 'createdAt', 'deliveredAt', 'eventId', 'eventType', 'id', 'lastAttemptAt', 'lastError', 'nextAttemptAt', 'responseBody', 'responseStatus', 'status', 'target', 'updatedAt', 'url'].sort(),
      );
      expect((await list()).body.data).toHaveLength(10);
    });

    it('filters by status and by eventType, also together and across pages', async () => {
      const failed = await list({ status: 'failed', limit: 100 });
      expect(failed.body.data.map((d: { id: string }) => d.id)).toEqual(seeded.filter((s) => s.status === 'failed').reverse().map((s) => s.id));
      const paid = await list({ eventType: 'checkout.paid', limit: 100 });
      expect(paid.body.data.map((d: { id: string }) => d.id)).toEqual(seeded.filter((s) => s.eventType === 'checkout.paid').reverse().map((s) => s.id));
      const both = seeded.filter((s) => s.status === 'succeeded' && s.eventType === 'checkout.funded').reverse().map((s) => s.id);
      expect(both.length).toBeGreaterThan(1);
      const page1 = await list({ status: 'succeeded', eventType: 'checkout.funded', limit: 1 });
      const page2 = await list({ status: 'succeeded', eventType: 'checkout.funded', limit: 100, starting_after: page1.body.nextCursor });
      expect([...page1.body.data, ...page2.body.data].map((d: { id: string }) => d.id)).toEqual(both);
    });

    it('rejects bad filters and cursors, and shows nothing of another organisation', async () => {
      expectInvalidParam(await list({ status: 'delivered' }), 'status');
      expectInvalidParam(await list({ eventType: 'checkout.expired' }), 'eventType');
      expectInvalidParam(await list({ limit: 0 }), 'limit');
      expectInvalidParam(await list({ limit: 101 }), 'limit');
      expectInvalidParam(await list({ starting_after: randomUUID() }), 'starting_after');
      expectInvalidParam(await list({ starting_after: seeded[0].id }, otherOrg.key), 'starting_after');
      const theirs = await list({ limit: 100 }, otherOrg.key);
      expect(theirs.body.data).toHaveLength(1);
      expect(theirs.body.data[0].url).toBe('http://127.0.0.1:9/x');
    });

    it('retry answers 200 with the delivery pending and enqueues its attempt; 404 for another organisation or an unknown id', async () => {
      const target = seeded.find((s) => s.status === 'failed')!;
      const res = await t.http.post(`${DELIVERIES}/${target.id}/retry`).set('X-Api-Key', org.key);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id: target.id, status: 'pending', attempts: 1 });
      const queue = t.app.get<Queue>(getQueueToken(WEBHOOK_DELIVERY_QUEUE));
      const job = await queue.getJob(`${target.id}_1`);
      expect(job?.data).toEqual({ deliveryId: target.id, attempt: 1 });
      expect(await job!.getState()).toBe('waiting');

      expectError(await t.http.post(`${DELIVERIES}/${target.id}/retry`).set('X-Api-Key', otherOrg.key), 404, 'not_found');
      expectError(await t.http.post(`${DELIVERIES}/${randomUUID()}/retry`).set('X-Api-Key', org.key), 404, 'not_found');
      expectError(await t.http.post(`${DELIVERIES}/not-a-uuid/retry`).set('X-Api-Key', org.key), 404, 'not_found');
      const [row] = await t.dataSource.query(`SELECT status FROM webhook_deliveries WHERE id = $1`, [target.id]);
      expect(row.status).toBe('pending');
    });
  });

  describe('SSRF guard at registration (WEBHOOK_ALLOW_PRIVATE=false)', () => {
    let strict: TestApp;
    let strictNoHttp: TestApp;
    beforeAll(async () => {
      strict = await createTestApp({ ...iso.env, WEBHOOK_ALLOW_PRIVATE: 'false' });
      strictNoHttp = await createTestApp({ ...iso.env, WEBHOOK_ALLOW_PRIVATE: 'false', WEBHOOK_ALLOW_HTTP: 'false' });
    });
    afterAll(async () => {
      await strict?.close();
      await strictNoHttp?.close();
    });

    it.each([
      'http://127.0.0.1:8080/hook',
      'http://169.254.169.254/latest/meta-data',
      'http://[::1]/hook',
      'http://localhost:3000/hook',
      'http://10.0.0.7/hook',
      'http://100.64.1.1/hook',
      'http://0.0.0.0/hook',
      'http://[fd00:ec2::254]/hook',
      'http://[::ffff:127.0.0.1]/hook',
    ])('refuses %s with details.param url and details.reason private_address', async (url) => {
      const org = await createOrg(strict.app);
      const res = await strict.http.put(ENDPOINT).set('X-Api-Key', org.key).send({ url });
      const details = expectError(res, 400, 'invalid_request');
      expect(details).toMatchObject({ param: 'url', reason: 'private_address' });
      expect((await strict.http.get(ENDPOINT).set('X-Api-Key', org.key)).status).toBe(404);
    });

    it('refuses userinfo, and http unless WEBHOOK_ALLOW_HTTP', async () => {
      const org = await createOrg(strictNoHttp.app);
      const userinfo = await strictNoHttp.http.put(ENDPOINT).set('X-Api-Key', org.key).send({ url: 'https://user:pw@example.com/hook' });
      expect(expectError(userinfo, 400, 'invalid_request')).toMatchObject({ param: 'url', reason: 'userinfo' });
      const http = await strictNoHttp.http.put(ENDPOINT).set('X-Api-Key', org.key).send({ url: 'http://example.com/hook' });
      expect(expectError(http, 400, 'invalid_request')).toMatchObject({ param: 'url', reason: 'scheme' });
    });

    it("applies the same check to a checkout session's webhookUrl", async () => {
      const org = await createOrg(strict.app);
      for (const webhookUrl of ['http://127.0.0.1/x', 'http://169.254.169.254/x', 'http://localhost/x']) {
        const res = await strict.http.post('/api/v1/checkout-sessions').set('X-Api-Key', org.key).send({ amount: '1', description: 'x', webhookUrl });
        expect(expectError(res, 400, 'invalid_request')).toMatchObject({ param: 'webhookUrl', reason: 'private_address' });
      }
      const [{ n }] = await strict.dataSource.query(`SELECT count(*)::int AS n FROM checkout_sessions WHERE organization_id = $1`, [org.organizationId]);
      expect(n).toBe(0);
    });
  });
});
