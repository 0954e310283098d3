import { Client } from 'pg';
import { v7 as uuidv7 } from 'uuid';
import { WebhookEvent } from '../../src/common/outbox/webhook-event';
import { OutboxRepository } from '../../src/common/outbox/outbox.repository';
import { ClusterLock } from '../../src/database/cluster-lock';
import { TransactionHost } from '../../src/database/transaction';
import { RETENTION_LOCK, WebhookRetentionService } from '../../src/modules/webhooks/delivery/webhook-retention.service';
import { WebhookDeliveriesRepository } from '../../src/modules/webhooks/webhook-deliveries.repository';
import { createTestApp, TestApp } from '../support/app';
import { createOrg, TestOrg } from '../support/factories';
import { waitFor } from '../support/wait';
import { emitEvents, isolatedWebhookEnv, IsolatedEnv, startTestWorker, TestWorker } from '../support/webhook-env';

jest.setTimeout(60_000);

/** The 30-day retention pass over events and deliveries, on the real worker and Postgres. */
describe('webhook retention', () => {
  let iso: IsolatedEnv;
  let api: TestApp;
  let worker: TestWorker | null = null;
  let org: TestOrg;

  beforeAll(async () => {
    iso = await isolatedWebhookEnv('whret');
    api = await createTestApp(iso.env);
    org = await createOrg(api.app);
  });
  const locks: ClusterLock[] = [];
  /** A replica's retention on the api's repositories, with its own lock connection (another process's session). */
  const replicaOnApi = () => {
    const lock = new ClusterLock(iso.env.DATABASE_URL);
    locks.push(lock);
    return new WebhookRetentionService(api.app.get(OutboxRepository), api.app.get(WebhookDeliveriesRepository), api.app.get(TransactionHost), lock);
  };
  afterAll(async () => {
    for (const l of locks) await l.close();
    await worker?.close();
    await api?.close();
    await iso?.drop();
  });

  /** One relayed event `daysAgo` old with one delivery per status given (rows as the relay writes them). */
  async function eventWith(daysAgo: number, statuses: Array<'succeeded' | 'failed' | 'held' | 'pending' | 'retrying'>, relayed = true): Promise<string> {
    const [id] = await emitEvents(api.app, org.organizationId, [{ type: WebhookEvent.CheckoutFunded, object: { daysAgo } }]);
    await api.dataSource.query(`UPDATE outbox_events SET created_at = now() - $2 * interval '1 day', relayed_at = CASE WHEN $3 THEN now() END WHERE id = $1`, [id, daysAgo, relayed]);
    const targets = ['endpoint', 'checkout'];
    for (const [i, status] of statuses.entries()) {
      await api.dataSource.query(
        `INSERT INTO webhook_deliveries (id, event_id, organization_id, event_type, target, url, status, created_at)
         VALUES ($1, $2, $3, 'checkout.funded', $4, $5, $6, now() - $7 * interval '1 day')`,
        [uuidv7(), id, org.organizationId, targets[i], `http://127.0.0.1:9/${i}`, status, daysAgo],
      );
    }
    return id;
  }
  const remaining = async () =>
    new Set(((await api.dataSource.query(`SELECT id FROM outbox_events WHERE organization_id = $1`, [org.organizationId])) as Array<{ id: string }>).map((r) => r.id));
  const deliveriesOf = async (ids: string[]) => (await api.dataSource.query(`SELECT 1 FROM webhook_deliveries WHERE event_id = ANY($1::uuid[])`, [ids])).length;

  // Before any worker runs (the api relays nothing), so the unrelayed event cannot be relayed by
  // the time the pass looks at it: with a worker, relay and retention race at its start.
  it('never deletes an event the outbox relay has not relayed yet, however old', async () => {
    const unrelayed = await eventWith(35, [], false);
    const relayed = await eventWith(35, []);
    const result = await replicaOnApi().prune();
    expect(result).toMatchObject({ ran: true, events: 1 });
    const left = await remaining();
    expect([left.has(unrelayed), left.has(relayed)]).toEqual([true, false]);
    await api.dataSource.query(`DELETE FROM outbox_events WHERE id = $1`, [unrelayed]);
  });

  it('the worker deletes events older than 30 days with their deliveries, keeping younger ones and those still in flight', async () => {
    const done = await eventWith(31, ['succeeded', 'failed']);
    const held = await eventWith(45, ['held']);
    const bare = await eventWith(40, []);
    const young = await eventWith(29, ['succeeded']);
    const retrying = await eventWith(31, ['succeeded', 'retrying']);
    const pending = await eventWith(60, ['pending']);
    expect(await deliveriesOf([done, held])).toBe(3);

    worker = await startTestWorker({ ...iso.env });
    const left = await waitFor(async () => {
      const ids = await remaining();
      return ids.has(done) ? null : ids;
    }, { label: 'the retention pass at worker start' });
    expect([...left].sort()).toEqual([young, retrying, pending].sort());
    expect([done, held, bare].some((id) => left.has(id))).toBe(false);
    expect(await deliveriesOf([done, held])).toBe(0);
    expect(await deliveriesOf([retrying])).toBe(2);
  });

  it('skips the pass while another replica holds the advisory lock, and runs once it is released', async () => {
    const old = await eventWith(31, ['succeeded']);
    const retention = worker!.app.get(WebhookRetentionService);
    const other = new Client({ connectionString: iso.env.DATABASE_URL });
    await other.connect();
    try {
      await other.query(`SELECT pg_advisory_lock($1::int, hashtext($2))`, [0x70637031, RETENTION_LOCK]);
      expect(await retention.prune()).toEqual({ ran: false, events: 0, deliveries: 0 });
      expect((await remaining()).has(old)).toBe(true);
      await other.query(`SELECT pg_advisory_unlock($1::int, hashtext($2))`, [0x70637031, RETENTION_LOCK]);
      const after = await retention.prune();
      expect(after.ran).toBe(true);
      expect(after.deliveries).toBe(1);
      expect((await remaining()).has(old)).toBe(false);
    } finally {
      await other.end();
    }
  });

  it('two replicas pruning at once delete every expired event exactly once, without error', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) ids.push(await eventWith(31 + i, ['succeeded']));
    const replicaA = worker!.app.get(WebhookRetentionService);
    const replicaB = replicaOnApi();
    const results = await Promise.all([replicaA.prune(), replicaB.prune(), replicaA.prune(), replicaB.prune()]);
    expect(results.some((r) => r.ran)).toBe(true);
    expect(results.reduce((n, r) => n + r.events, 0)).toBe(20);
    const left = await remaining();
    expect(ids.filter((id) => left.has(id))).toEqual([]);
  });
});
