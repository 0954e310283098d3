import { Queue } from 'bullmq';
import { Client } from 'pg';
import { v7 as uuidv7 } from 'uuid';
import { WebhookEvent } from '../../src/common/outbox/webhook-event';
import { AppConfig } from '../../src/config/app-config';
import { DeliveryRecoveryService, RECOVERY_LOCK } from '../../src/modules/webhooks/delivery/delivery-recovery.service';
import { RECOVER_JOB, RETENTION_JOB, WEBHOOK_JOBS_QUEUE } from '../../src/modules/webhooks/delivery/webhook-jobs.processor';
import { DeliveryQueue } from '../../src/modules/webhooks/webhooks.queue';
import { WebhookDeliveriesRepository } from '../../src/modules/webhooks/webhook-deliveries.repository';
import { ClusterLock } from '../../src/database/cluster-lock';
import { createTestApp, TestApp } from '../support/app';
import { createOrg, TestOrg } from '../support/factories';
import { waitFor } from '../support/wait';
import { emitEvents, isolatedWebhookEnv, IsolatedEnv, startTestWorker } from '../support/webhook-env';

jest.setTimeout(60_000);

/**
 * The webhook path's scheduled passes (STYLE.md: one way to run periodic work): BullMQ job
 * schedulers on the worker, each pass under a cluster-wide advisory lock, so two workers never
 * run one pass twice. (The retention pass's lock: test/integration/webhooks-retention.int-spec.ts.)
 */
describe('webhook jobs: schedulers and one recovery pass at a time across workers', () => {
  let iso: IsolatedEnv;
  let api: TestApp;
  let org: TestOrg;
  const locks: ClusterLock[] = [];

  beforeAll(async () => {
    iso = await isolatedWebhookEnv('whjobs');
    api = await createTestApp(iso.env);
    org = await createOrg(api.app);
  });
  afterAll(async () => {
    for (const l of locks) await l.close();
    await api?.close();
    await iso?.drop();
  });

  /** A worker's own recovery service (its own lock connection) on the api's repository and queue. */
  const replica = () => {
    const lock = new ClusterLock(api.app.get(AppConfig).env.DATABASE_URL);
    locks.push(lock);
    return new DeliveryRecoveryService(api.app.get(WebhookDeliveriesRepository), api.app.get(DeliveryQueue), lock);
  };

  /** `n` due `pending` deliveries that have no job (as after a Redis wipe). */
  async function dueWithoutJob(n: number): Promise<string[]> {
    const events = await emitEvents(api.app, org.organizationId, Array.from({ length: n }, (_, i) => ({ type: WebhookEvent.CheckoutFunded, object: { i } })));
    const ids: string[] = [];
    for (const [i, eventId] of events.entries()) {
      const id = uuidv7();
      await api.dataSource.query(
        `INSERT INTO webhook_deliveries (id, event_id, organization_id, event_type, target, url, status, next_attempt_at)
         VALUES ($1, $2, $3, 'checkout.funded', 'endpoint', $4, 'pending', now() - interval '1 minute')`,
        [id, eventId, org.organizationId, `http://127.0.0.1:9/${i}`],
      );
      ids.push(id);
    }
    return ids;
  }
  const queued = async (ids: string[]) => {
    const queue = api.app.get(DeliveryQueue).queue;
    return (await Promise.all(ids.map((id) => queue.getJobState(id)))).filter((s) => s === 'waiting').length;
  };

  it('skips the recovery pass while another worker holds its lock, and runs it once released', async () => {
    const ids = await dueWithoutJob(3);
    const other = new Client({ connectionString: iso.env.DATABASE_URL });
    await other.connect();
    try {
      await other.query(`SELECT pg_advisory_lock($1::int, hashtext($2))`, [0x70637031, RECOVERY_LOCK]);
      const r = replica();
      expect(await r.recoverExclusive()).toBeNull();
      expect(await queued(ids)).toBe(0);
      await other.query(`SELECT pg_advisory_unlock($1::int, hashtext($2))`, [0x70637031, RECOVERY_LOCK]);
      expect(await r.recoverExclusive()).toBe(3);
      expect(await queued(ids)).toBe(3);
    } finally {
      await other.end();
    }
  });

  it('two workers run the scheduled recovery pass at once: one runs it, the other skips', async () => {
    const [a, b] = [replica(), replica()];
    await Promise.all([a.recoverExclusive(), b.recoverExclusive()]); // connects both lock sessions first
    const ids = await dueWithoutJob(300);
    const results = await Promise.all([a.recoverExclusive(), b.recoverExclusive()]);
    expect(results.filter((r) => r === null)).toHaveLength(1);
    expect(results.find((r) => r !== null)).toBe(300);
    expect(await queued(ids)).toBe(300);
  });

  it('the worker registers both passes as job schedulers, and registers them again after Redis loses them', async () => {
    await api.dataSource.query(`DELETE FROM webhook_deliveries`); // nothing for this worker to send
    await iso.flushRedis();
    const worker = await startTestWorker({ ...iso.env, WEBHOOK_RECOVERY_INTERVAL_MS: '300' });
    const queue = new Queue(WEBHOOK_JOBS_QUEUE, { connection: { url: process.env.REDIS_URL!, maxRetriesPerRequest: null }, prefix: iso.env.REDIS_PREFIX });
    try {
      const schedulers = async () => (await queue.getJobSchedulers()).map((s) => s.key).sort();
      expect(await schedulers()).toEqual([RECOVER_JOB, RETENTION_JOB].sort());
      expect(await iso.flushRedis()).toBeGreaterThan(0);
      await waitFor(async () => ((await schedulers()).length === 2 ? true : null), { label: 'schedulers registered again after the wipe' });
      expect(await schedulers()).toEqual([RECOVER_JOB, RETENTION_JOB].sort());
    } finally {
      await queue.close();
      await worker.close();
    }
  });
});
