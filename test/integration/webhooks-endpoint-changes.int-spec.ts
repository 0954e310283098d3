import { ClsService } from 'nestjs-cls';
import { Client } from 'pg';
import { Webhook } from 'standardwebhooks';
import { WebhookEvent } from '../../src/common/outbox/webhook-event';
import { TransactionHost, TxHost } from '../../src/database/transaction';
import { deliveriesFor } from '../../src/modules/webhooks/delivery/outbox-relay.service';
import { EventFanOut } from '../../src/modules/webhooks/event-fan-out.service';
import { createTestApp, TestApp } from '../support/app';
import { createOrg, TestOrg } from '../support/factories';
import { sleep, waitFor } from '../support/wait';
import { deliveryRows, emitEvents, isolatedWebhookEnv, IsolatedEnv, startTestWorker, TestWorker } from '../support/webhook-env';
import { WebhookReceiver } from '../support/webhook-receiver';

jest.setTimeout(120_000);

const ENDPOINT = '/api/v1/webhook-endpoints';

/**
 * What happens to deliveries when the merchant changes the endpoint under them (replaced URL,
 * disabled, 410 Gone, re-enabled, rotated secret), through the real worker, Postgres, Redis and
 * local receivers.
 */
describe('webhook deliveries follow the endpoint as it is now', () => {
  let iso: IsolatedEnv;
  let api: TestApp;
  let worker: TestWorker;
  const receivers: WebhookReceiver[] = [];

  const receiver = async () => {
    const r = await WebhookReceiver.start();
    receivers.push(r);
    return r;
  };
  const put = (org: TestOrg, body: object) => api.http.put(ENDPOINT).set('X-Api-Key', org.key).send(body);

  async function orgWithEndpoint(url: string): Promise<TestOrg & { secret: string }> {
    const org = await createOrg(api.app);
    const res = await put(org, { url });
    expect(res.status).toBe(200);
    return { ...org, secret: res.body.secret as string };
  }

  const rows = (orgId: string) => deliveryRows(api.dataSource, orgId);
  const relayed = (orgId: string) => async () =>
    (await api.dataSource.query(`SELECT 1 FROM outbox_events WHERE organization_id = $1 AND relayed_at IS NULL`, [orgId])).length === 0;
  const settled = (orgId: string, n: number) => async () => {
    const r = await rows(orgId);
    return r.length === n && r.every((d) => d.status === 'succeeded') ? r : null;
  };

  beforeAll(async () => {
    iso = await isolatedWebhookEnv('whchg');
    api = await createTestApp(iso.env);
    worker = await startTestWorker({ ...iso.env, WEBHOOK_RETRY_SCALE: '0.001', WEBHOOK_RECOVERY_INTERVAL_MS: '1000' });
  });

  afterAll(async () => {
    await worker?.close();
    await api?.close();
    for (const r of receivers) await r.close();
    await iso?.drop();
  });

  it("a retry after the endpoint URL was replaced goes to the new URL; a checkout's own webhookUrl keeps its URL", async () => {
    const a = await receiver();
    const b = await receiver();
    const checkout = await receiver();
    a.respond = () => 500;
    checkout.respond = (_d, nth) => (nth === 1 ? 500 : 200);
    const org = await orgWithEndpoint(a.url('/a'));
    b.secrets = [org.secret];
    a.hold();
    const [eventId] = await emitEvents(api.app, org.organizationId, [{ type: WebhookEvent.CheckoutFunded, object: { id: 'c-1' }, extraTargetUrl: checkout.url('/co') }]);
    await waitFor(() => a.heldCount === 1, { label: 'the first attempt at A is in flight' });
    expect((await put(org, { url: b.url('/b') })).status).toBe(200);
    a.release();

    const done = await waitFor(settled(org.organizationId, 2), { timeoutMs: 15_000, label: 'both deliveries succeeded', describe: () => rows(org.organizationId) });
    expect(a.received.map((d) => d.webhookId)).toEqual([eventId]);
    expect(b.received).toHaveLength(1);
    expect(b.received[0]).toMatchObject({ webhookId: eventId, path: '/b', verifiedWith: [0] });
    expect(checkout.received.map((d) => [d.webhookId, d.path])).toEqual([
      [eventId, '/co'],
      [eventId, '/co'],
    ]);
    const byUrl = new Map(done.map((d) => [d.url, d]));
    expect(byUrl.get(b.url('/b'))).toMatchObject({ attempts: 2, response_status: 200 });
    expect(byUrl.get(checkout.url('/co'))).toMatchObject({ attempts: 2, response_status: 200 });
    expect(byUrl.has(a.url('/a'))).toBe(false);
  });

  it('events relayed while the endpoint is disabled are held, nothing is sent; re-enabling delivers each once with its webhook-id', async () => {
    const r = await receiver();
    const org = await orgWithEndpoint(r.url());
    r.secrets = [org.secret];
    expect((await put(org, { url: r.url(), enabled: false })).body).toMatchObject({ enabled: false });
    const ids = await emitEvents(api.app, org.organizationId, [
      { type: WebhookEvent.CheckoutFunded, object: { id: 'c-2' } },
      { type: WebhookEvent.CheckoutAccepted, object: { id: 'c-2' } },
      { type: WebhookEvent.CheckoutRefunded, object: { id: 'c-2' } },
    ]);
    await waitFor(relayed(org.organizationId), { label: 'events relayed' });
    const held = await rows(org.organizationId);
    expect(held.map((d) => [d.event_id, d.status, d.attempts, d.next_attempt_at])).toEqual(ids.map((id) => [id, 'held', 0, null]));
    const listed = await api.http.get('/api/v1/webhook-deliveries').query({ status: 'held' }).set('X-Api-Key', org.key);
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((d: { eventId: string }) => d.eventId).sort()).toEqual([...ids].sort());
    await sleep(500);
    expect(r.received).toHaveLength(0);

    expect((await put(org, { url: r.url(), enabled: true })).body).toMatchObject({ enabled: true, disabledReason: null });
    const done = await waitFor(settled(org.organizationId, 3), { timeoutMs: 15_000, label: 'held deliveries sent', describe: () => rows(org.organizationId) });
    expect(done.every((d) => d.attempts === 1)).toBe(true);
    await sleep(300);
    expect(r.received.map((d) => d.webhookId).sort()).toEqual([...ids].sort());
    expect(r.received.every((d) => d.verifiedWith.length === 1)).toBe(true);
  });

  it('a delivery retrying when the merchant disables the endpoint is held, not failed, and goes out on re-enable', async () => {
    const r = await receiver();
    r.respond = (_d, nth) => (nth === 1 ? 500 : 200);
    const org = await orgWithEndpoint(r.url());
    r.hold();
    const [eventId] = await emitEvents(api.app, org.organizationId, [{ type: WebhookEvent.CheckoutFunded, object: { id: 'c-3' } }]);
    await waitFor(() => r.heldCount === 1, { label: 'first attempt in flight' });
    await put(org, { url: r.url(), enabled: false }).expect(200);
    r.release();
    const [held] = await waitFor(async () => {
      const list = await rows(org.organizationId);
      return list[0]?.attempts === 1 && list[0].status !== 'retrying' ? list : null;
    }, { label: 'the retry found the endpoint disabled', describe: () => rows(org.organizationId) });
    expect(held).toMatchObject({ status: 'held', attempts: 1, response_status: 500, next_attempt_at: null });
    expect(r.received).toHaveLength(1);

    await put(org, { url: r.url(), enabled: true }).expect(200);
    const [done] = await waitFor(settled(org.organizationId, 1), { timeoutMs: 15_000, label: 'delivered after re-enable' });
    expect(done).toMatchObject({ attempts: 2, response_status: 200 });
    expect(r.received.map((d) => [d.webhookId, d.answeredStatus])).toEqual([
      [eventId, 500],
      [eventId, 200],
    ]);
  });

  it('a 410 Gone disables the endpoint and holds that delivery and the events after it; re-enabling delivers them all once', async () => {
    const r = await receiver();
    r.respond = (_d, nth) => (r.received.length === 1 && nth === 1 ? 410 : 200);
    const org = await orgWithEndpoint(r.url());
    const [goneId] = await emitEvents(api.app, org.organizationId, [{ type: WebhookEvent.CheckoutFunded, object: { id: 'c-4' } }]);
    const [gone] = await waitFor(async () => {
      const list = await rows(org.organizationId);
      return list[0]?.attempts === 1 ? list : null;
    }, { label: 'the 410 recorded', describe: () => rows(org.organizationId) });
    expect(gone).toMatchObject({ status: 'held', response_status: 410, last_error: 'HTTP 410 Gone: endpoint disabled' });
    expect((await api.http.get(ENDPOINT).set('X-Api-Key', org.key)).body).toMatchObject({ enabled: false, disabledReason: 'gone' });

    const ids = await emitEvents(api.app, org.organizationId, [
      { type: WebhookEvent.CheckoutAccepted, object: { id: 'c-4' } },
      { type: WebhookEvent.CheckoutReleased, object: { id: 'c-4' } },
    ]);
    expect(ids).toHaveLength(3);
    await waitFor(relayed(org.organizationId), { label: 'events relayed' });
    const held = await rows(org.organizationId);
    expect(held.map((d) => d.status)).toEqual(['held', 'held', 'held', 'held']);
    expect(held.slice(1).map((d) => d.event_id).sort()).toEqual([...ids].sort());
    await sleep(300);
    expect(r.received).toHaveLength(1);

    await put(org, { url: r.url(), enabled: true }).expect(200);
    await waitFor(settled(org.organizationId, 4), { timeoutMs: 15_000, label: 'all delivered after re-enable', describe: () => rows(org.organizationId) });
    await sleep(300);
    const got = r.byWebhookId();
    expect([...got.keys()].sort()).toEqual([goneId, ...ids].sort());
    expect(got.get(goneId)!.map((d) => d.answeredStatus)).toEqual([410, 200]);
    for (const id of ids) expect(got.get(id)).toHaveLength(1);
  });

  it('events relayed while the endpoint is toggled on and off concurrently are each delivered exactly once, none left held', async () => {
    const r = await receiver();
    const org = await orgWithEndpoint(r.url());
    const ids: string[] = [];
    const emitting = (async () => {
      for (let i = 0; i < 40; i++) {
        ids.push(...(await emitEvents(api.app, org.organizationId, [{ type: WebhookEvent.CheckoutFunded, object: { n: i } }])));
        await sleep(5);
      }
    })();
    const toggling = (async () => {
      for (let i = 0; i < 16; i++) {
        await put(org, { url: r.url(), enabled: i % 2 === 1 }).expect(200);
        await sleep(7);
      }
    })();
    await Promise.all([emitting, toggling]);
    await put(org, { url: r.url(), enabled: true }).expect(200);
    await waitFor(settled(org.organizationId, 40), { timeoutMs: 30_000, label: '40 delivered', describe: async () => (await rows(org.organizationId)).map((d) => d.status) });
    await sleep(300);
    const got = r.byWebhookId();
    expect([...got.keys()].sort()).toEqual([...ids].sort());
    expect([...got.values()].filter((l) => l.length !== 1)).toEqual([]);
  });

  describe('failure streak', () => {
    const endpointOf = async (org: TestOrg) => (await api.http.get(ENDPOINT).set('X-Api-Key', org.key)).body;
    const streakStartedAgo = (org: TestOrg, interval: string) =>
      api.dataSource.query(`UPDATE webhook_endpoints SET failing_since = now() - $2::interval WHERE organization_id = $1`, [org.organizationId, interval]);

    it('the first failed attempt starts it and a success ends it', async () => {
      const r = await receiver();
      r.respond = (_d, nth) => {
        if (nth === 2) r.hold();
        return nth === 1 ? 500 : 200;
      };
      const org = await orgWithEndpoint(r.url());
      expect((await endpointOf(org)).failingSince).toBeNull();
      await emitEvents(api.app, org.organizationId, [{ type: WebhookEvent.CheckoutFunded, object: { id: 'c-10' } }]);
      await waitFor(() => r.heldCount === 1, { label: 'the second attempt in flight' });
      const [failed] = await rows(org.organizationId);
      const during = await endpointOf(org);
      expect(during).toMatchObject({ enabled: true, failingSince: new Date(failed.last_attempt_at!).toISOString() });
      r.release();
      await waitFor(settled(org.organizationId, 1), { label: 'delivered' });
      expect(await endpointOf(org)).toMatchObject({ enabled: true, failingSince: null });
    });

    it('after five days of failures the next failure disables the endpoint as failing and holds the delivery; re-enabling sends it', async () => {
      const r = await receiver();
      r.respond = (_d, nth) => (nth === 1 ? 503 : 200);
      const org = await orgWithEndpoint(r.url());
      await streakStartedAgo(org, '5 days 1 minute');
      const [eventId] = await emitEvents(api.app, org.organizationId, [{ type: WebhookEvent.CheckoutFunded, object: { id: 'c-11' } }]);
      const [held] = await waitFor(async () => {
        const list = await rows(org.organizationId);
        return list[0]?.attempts === 1 ? list : null;
      }, { label: 'the failure recorded' });
      expect(held).toMatchObject({ status: 'held', response_status: 503, next_attempt_at: null, last_error: 'HTTP 503; endpoint disabled: every attempt failed for 5 days' });
      expect(await endpointOf(org)).toMatchObject({ enabled: false, disabledReason: 'failing' });
      await sleep(200);
      expect(r.received).toHaveLength(1);

      expect((await put(org, { url: r.url(), enabled: true })).body).toMatchObject({ enabled: true, disabledReason: null, failingSince: null });
      await waitFor(settled(org.organizationId, 1), { label: 'sent after re-enabling' });
      expect(r.received.map((d) => [d.webhookId, d.answeredStatus])).toEqual([
        [eventId, 503],
        [eventId, 200],
      ]);
    });

    it('four days of failures are not enough, and a failure at a replaced URL does not count', async () => {
      const r = await receiver();
      r.respond = (_d, nth) => (nth === 1 ? 500 : 200);
      const org = await orgWithEndpoint(r.url());
      await streakStartedAgo(org, '4 days 23 hours');
      await emitEvents(api.app, org.organizationId, [{ type: WebhookEvent.CheckoutFunded, object: { id: 'c-12' } }]);
      const [done] = await waitFor(settled(org.organizationId, 1), { label: 'delivered on the retry' });
      expect(done.attempts).toBe(2);
      expect(await endpointOf(org)).toMatchObject({ enabled: true, failingSince: null });

      const old = await receiver();
      old.respond = () => 500;
      const fresh = await receiver();
      await put(org, { url: old.url() }).expect(200);
      await streakStartedAgo(org, '6 days');
      old.hold();
      await emitEvents(api.app, org.organizationId, [{ type: WebhookEvent.CheckoutAccepted, object: { id: 'c-12' } }]);
      await waitFor(() => old.heldCount === 1, { label: 'attempt at the old URL in flight' });
      expect((await put(org, { url: fresh.url() })).body).toMatchObject({ enabled: true, failingSince: null });
      await streakStartedAgo(org, '6 days');
      old.release();
      await waitFor(settled(org.organizationId, 2), { label: 'delivered at the new URL' });
      expect(fresh.received).toHaveLength(1);
      expect(await endpointOf(org)).toMatchObject({ enabled: true, disabledReason: null, failingSince: null });
    });
  });

  describe('with the relay driven by hand (no worker running)', () => {
    let running = true;
    const startWorker = async () => {
      worker = await startTestWorker({ ...iso.env, WEBHOOK_RETRY_SCALE: '0.001', WEBHOOK_RECOVERY_INTERVAL_MS: '1000' });
      running = true;
    };
    beforeAll(async () => {
      await worker.close();
      running = false;
    });
    afterAll(async () => {
      if (!running) await startWorker();
    });

    /** Relays the organisation's waiting events as the worker's relay does, in one transaction. */
    async function relayByHand(orgId: string): Promise<void> {
      const repo = api.app.get(EventFanOut);
      await (api.app.get(TransactionHost) as TxHost).withTransaction(async () => {
        const claimed = (await repo.claimPendingEvents(100)).filter((e) => e.organizationId === orgId);
        await repo.insertDeliveriesAndMarkRelayed(claimed.flatMap((e) => deliveriesFor(e)), claimed.map((e) => e.id));
      });
    }

    it('a PUT enabling the endpoint while a relay holds its events waits for the relay and then releases them', async () => {
      const r = await receiver();
      const org = await orgWithEndpoint(r.url());
      await put(org, { url: r.url(), enabled: false }).expect(200);
      const [eventId] = await emitEvents(api.app, org.organizationId, [{ type: WebhookEvent.CheckoutFunded, object: { id: 'c-8' } }]);
      const repo = api.app.get(EventFanOut);
      let enabling: Promise<{ status: number }> | null = null;
      // In a CLS context of its own: the in-process server would otherwise inherit the test's
      // transaction and join it instead of waiting for it.
      const enable = () => api.app.get(ClsService).run({ ifNested: 'override' }, () => put(org, { url: r.url(), enabled: true }).then((res) => res));
      let answered = false;
      let answeredBeforeRelayCommitted: boolean | null = null;
      await (api.app.get(TransactionHost) as TxHost).withTransaction(async () => {
        const claimed = (await repo.claimPendingEvents(100)).filter((e) => e.organizationId === org.organizationId);
        expect(claimed.map((e) => [e.id, e.endpoint?.enabled])).toEqual([[eventId, false]]);
        enabling = enable().then((res) => {
          answered = true;
          return res;
        });
        await sleep(500);
        const rowsToInsert = claimed.flatMap((e) => deliveriesFor(e));
        expect(rowsToInsert.map((d) => d.status)).toEqual(['held']);
        await repo.insertDeliveriesAndMarkRelayed(rowsToInsert, claimed.map((e) => e.id));
        answeredBeforeRelayCommitted = answered;
      });
      expect((await enabling!).status).toBe(200);
      expect(answeredBeforeRelayCommitted).toBe(false);
      const [row] = await rows(org.organizationId);
      expect(row).toMatchObject({ event_id: eventId, status: 'pending', attempts: 0 });
    });

    it('an attempt that leased a delivery while the endpoint looked disabled waits for an enabling PUT in flight, then sends instead of holding', async () => {
      const r = await receiver();
      const org = await orgWithEndpoint(r.url());
      const [eventId] = await emitEvents(api.app, org.organizationId, [{ type: WebhookEvent.CheckoutFunded, object: { id: 'c-9' } }]);
      await relayByHand(org.organizationId);
      await put(org, { url: r.url(), enabled: false }).expect(200);
      expect((await rows(org.organizationId)).map((d) => d.status)).toEqual(['pending']);

      // An enabling PUT in flight: the endpoint row is locked and enabled, not yet committed.
      const inFlight = new Client({ connectionString: iso.env.DATABASE_URL });
      await inFlight.connect();
      try {
        await inFlight.query('BEGIN');
        await inFlight.query(`UPDATE webhook_endpoints SET enabled = true, disabled_reason = NULL WHERE organization_id = $1`, [org.organizationId]);
        await startWorker();
        const waiting = async () =>
          (await api.dataSource.query(`SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`)).length > 0;
        await waitFor(async () => (await waiting()) || (await rows(org.organizationId))[0].status !== 'pending', { label: 'the attempt reached the endpoint lock' });
        await inFlight.query('COMMIT');
      } finally {
        await inFlight.end();
      }
      const [done] = await waitFor(settled(org.organizationId, 1), { timeoutMs: 10_000, label: 'sent after the PUT committed', describe: () => rows(org.organizationId) });
      expect(done).toMatchObject({ attempts: 1, response_status: 200 });
      expect(r.received.map((d) => d.webhookId)).toEqual([eventId]);
    });
  });

  describe('rotateSecret', () => {
    it('a repeated rotation inside the 24 h overlap keeps the secret from before the first rotation signing', async () => {
      const r = await receiver();
      const org = await orgWithEndpoint(r.url());
      const deployed = org.secret;
      const first = await put(org, { url: r.url(), rotateSecret: true }).expect(200);
      const retried = await put(org, { url: r.url(), rotateSecret: true }).expect(200);
      const newest = retried.body.secret as string;
      expect(newest).toMatch(/^whsec_/);
      expect(newest).not.toBe(first.body.secret);

      r.secrets = [deployed, first.body.secret as string, newest];
      const [eventId] = await emitEvents(api.app, org.organizationId, [{ type: WebhookEvent.CheckoutFunded, object: { id: 'c-5' } }]);
      const d = await waitFor(() => r.received.find((x) => x.webhookId === eventId), { label: 'delivery after two rotations' });
      expect(d.verifiedWith).toEqual([0, 2]);
      expect(() => new Webhook(deployed).verify(d.rawBody, d.headers)).not.toThrow();
      expect(retried.body.previousSecretExpiresAt).toBe(first.body.previousSecretExpiresAt);
    });

    it('concurrent twin rotations leave the deployed secret signing and exactly one of the two new secrets current', async () => {
      const r = await receiver();
      const org = await orgWithEndpoint(r.url());
      const deployed = org.secret;
      const twins = await Promise.all([put(org, { url: r.url(), rotateSecret: true }), put(org, { url: r.url(), rotateSecret: true })]);
      expect(twins.map((t) => t.status)).toEqual([200, 200]);
      const issued = twins.map((t) => t.body.secret as string);
      r.secrets = [deployed, ...issued];
      const [eventId] = await emitEvents(api.app, org.organizationId, [{ type: WebhookEvent.CheckoutFunded, object: { id: 'c-6' } }]);
      const d = await waitFor(() => r.received.find((x) => x.webhookId === eventId), { label: 'delivery after twin rotations' });
      expect(d.verifiedWith[0]).toBe(0);
      expect(d.verifiedWith).toHaveLength(2);
    });

    it('a rotation after the overlap ended retires the expired secret and keeps the current one for 24 h', async () => {
      const r = await receiver();
      const org = await orgWithEndpoint(r.url());
      const s1 = (await put(org, { url: r.url(), rotateSecret: true }).expect(200)).body.secret as string;
      await api.dataSource.query(`UPDATE webhook_endpoints SET previous_secret_expires_at = now() - interval '1 second' WHERE organization_id = $1`, [org.organizationId]);
      const s2 = (await put(org, { url: r.url(), rotateSecret: true }).expect(200)).body.secret as string;
      r.secrets = [org.secret, s1, s2];
      const [eventId] = await emitEvents(api.app, org.organizationId, [{ type: WebhookEvent.CheckoutFunded, object: { id: 'c-7' } }]);
      const d = await waitFor(() => r.received.find((x) => x.webhookId === eventId), { label: 'delivery after a later rotation' });
      expect(d.verifiedWith).toEqual([1, 2]);
    });
  });
});
