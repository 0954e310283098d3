import type { AddressInfo } from 'node:net';
import { Pcp } from '@pcp/sdk';
import type { DataSource } from 'typeorm';
import { WebhookEvent } from '../../src/common/outbox/webhook-event';
import { createTestApp, TestApp } from '../support/app';
import { createOrg, TestOrg } from '../support/factories';
import { waitFor } from '../support/wait';
import { deliveryRows, emitEvents, isolatedWebhookEnv, IsolatedEnv, startTestWorker, TestWorker } from '../support/webhook-env';
import { WebhookReceiver } from '../support/webhook-receiver';

jest.setTimeout(120_000);

/**
 * Walks a list endpoint page by page (`limit`, `starting_after` = the previous page's
 * `nextCursor`) as a black-box client would, and returns every id in the order served.
 */
async function walk(t: TestApp, org: TestOrg, path: string, limit: number): Promise<string[]> {
  const seen: string[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < 200; page++) {
    const res = await t.http
      .get(path)
      .query(cursor ? { limit, starting_after: cursor } : { limit })
      .set('X-Api-Key', org.key);
    expect(res.status).toBe(200);
    const body = res.body as { data: Array<{ id: string }>; hasMore: boolean; nextCursor: string | null };
    expect(body.data.length).toBeLessThanOrEqual(limit);
    seen.push(...body.data.map((d) => d.id));
    if (!body.hasMore) {
      expect(body.nextCursor).toBeNull();
      return seen;
    }
    expect(body.data).toHaveLength(limit);
    expect(body.nextCursor).toBe(body.data[body.data.length - 1].id);
    cursor = body.nextCursor;
  }
  throw new Error(`${path} did not end within 200 pages`);
}

/**
 * The same walk through the SDK's `list()` iterator (packages/sdk, DESIGN §20), as a merchant's
 * code pages: the app listens on a free port for the call and stops listening afterwards.
 */
async function walkWithSdk(t: TestApp, org: TestOrg, path: '/api/v1/checkout-sessions' | '/api/v1/webhook-deliveries', limit: number): Promise<string[]> {
  const server = t.app.getHttpServer();
  if (!server.listening) await t.app.listen(0, '127.0.0.1');
  const pcp = new Pcp({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, credentials: { apiKey: org.key } });
  const seen: string[] = [];
  for await (const item of pcp.list(path, { params: { query: { limit } } })) seen.push(item.id);
  return seen;
}

/** Ids of `table` rows of the organisation, newest first as Postgres orders them (microseconds, then id). */
async function newestFirst(ds: DataSource, table: 'checkout_sessions' | 'webhook_deliveries', organizationId: string): Promise<string[]> {
  const rows: Array<{ id: string }> = await ds.query(`SELECT id FROM ${table} WHERE organization_id = $1 ORDER BY created_at DESC, id DESC`, [organizationId]);
  return rows.map((r) => r.id);
}

/** How many distinct millisecond timestamps the rows' `created_at` values truncate to. */
async function distinctMillis(ds: DataSource, table: 'checkout_sessions' | 'webhook_deliveries', organizationId: string): Promise<number> {
  const [row]: Array<{ n: number }> = await ds.query(
    `SELECT count(DISTINCT date_trunc('milliseconds', created_at))::int AS n FROM ${table} WHERE organization_id = $1`,
    [organizationId],
  );
  return row.n;
}

/**
 * Keyset pagination over rows created in the same millisecond (docs/architecture.md §6): every
 * row exactly once, newest first, whatever the page size. The cursor is compared with the cursor
 * row's own `created_at` inside SQL, so microseconds never pass through a JavaScript Date.
 */
describe('list pagination over same-millisecond rows', () => {
  describe('checkout sessions created concurrently over HTTP', () => {
    let t: TestApp;
    let org: TestOrg;
    let expected: string[];

    /**
     * 30 sessions of a fresh organisation created at once over HTTP. The case under test needs
     * some of them to share a millisecond; on a loaded machine a round may spread them out, so
     * up to 5 rounds are made and the first with a shared millisecond is walked.
     */
    beforeAll(async () => {
      t = await createTestApp();
      for (let round = 0; round < 5; round++) {
        org = await createOrg(t.app);
        const created = await Promise.all(
          Array.from({ length: 30 }, (_, i) =>
            t.http.post('/api/v1/checkout-sessions').set('X-Api-Key', org.key).send({ amount: '1.00', description: `concurrent ${i}` }),
          ),
        );
        for (const res of created) expect(res.status).toBe(200);
        expected = await newestFirst(t.dataSource, 'checkout_sessions', org.organizationId);
        expect(new Set(expected)).toEqual(new Set(created.map((r) => r.body.id as string)));
        if ((await distinctMillis(t.dataSource, 'checkout_sessions', org.organizationId)) < 30) return;
      }
      throw new Error('5 rounds of 30 concurrent creations never put two sessions in one millisecond');
    });
    afterAll(() => t?.close());

    it.each([1, 2, 3])('limit %i: all 30 exactly once, newest first', async (limit) => {
      const seen = await walk(t, org, '/api/v1/checkout-sessions', limit);
      expect(seen).toHaveLength(30);
      expect(seen).toEqual(expected);
    });

    it.each([1, 7])("limit %i through the SDK's list(): all 30 exactly once, newest first", async (limit) => {
      expect(await walkWithSdk(t, org, '/api/v1/checkout-sessions', limit)).toEqual(expected);
    });
  });

  describe('webhook deliveries of one relay batch', () => {
    const EVENTS = 7;
    let iso: IsolatedEnv;
    let t: TestApp;
    let worker: TestWorker;
    let receiver: WebhookReceiver;
    let org: TestOrg;
    let expected: string[];

    beforeAll(async () => {
      iso = await isolatedWebhookEnv('pages');
      t = await createTestApp(iso.env);
      receiver = await WebhookReceiver.start();
      org = await createOrg(t.app);
      const endpoint = await t.http.put('/api/v1/webhook-endpoints').set('X-Api-Key', org.key).send({ url: receiver.url('/hook') });
      expect(endpoint.status).toBe(200);
      receiver.secrets = [endpoint.body.secret as string];
      worker = await startTestWorker(iso.env);
      // One transaction, so the relay claims all events at once and inserts their deliveries together.
      await emitEvents(
        t.app,
        org.organizationId,
        Array.from({ length: EVENTS }, (_, i) => ({ type: 'checkout.funded' as WebhookEvent, object: { id: `cs_${i}`, n: i } })),
      );
      await waitFor(async () => (await deliveryRows(t.dataSource, org.organizationId)).length === EVENTS, { label: `${EVENTS} delivery rows` });
      expected = await newestFirst(t.dataSource, 'webhook_deliveries', org.organizationId);
      // One relay batch: one transaction, so one now() for every delivery row.
      const [{ n }]: Array<{ n: number }> = await t.dataSource.query(
        `SELECT count(DISTINCT created_at)::int AS n FROM webhook_deliveries WHERE organization_id = $1`,
        [org.organizationId],
      );
      expect(n).toBe(1);
    });
    afterAll(async () => {
      await worker?.close();
      await t?.close();
      await receiver?.close();
      await iso?.drop();
    });

    it.each([1, 2, 3])(`limit %i: all ${EVENTS} exactly once, newest first`, async (limit) => {
      const seen = await walk(t, org, '/api/v1/webhook-deliveries', limit);
      expect(seen).toHaveLength(EVENTS);
      expect(seen).toEqual(expected);
    });

    it("limit 2 through the SDK's list(): every delivery exactly once, newest first", async () => {
      expect(await walkWithSdk(t, org, '/api/v1/webhook-deliveries', 2)).toEqual(expected);
    });
  });
});
