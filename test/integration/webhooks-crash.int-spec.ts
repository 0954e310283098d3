import { ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { WebhookEvent } from '../../src/common/outbox/webhook-event';
import { createTestApp, TestApp } from '../support/app';
import { createOrg } from '../support/factories';
import { waitFor } from '../support/wait';
import { deliveryRows, emitEvents, isolatedWebhookEnv, IsolatedEnv } from '../support/webhook-env';
import { WebhookReceiver } from '../support/webhook-receiver';
import { freePort } from '../support/processes';

jest.setTimeout(300_000);

const WORKER_JS = join(__dirname, '..', '..', 'dist', 'src', 'worker.js');
const EVENTS = 500;

/** The compiled worker (`node dist/src/worker.js`, what `npm run worker:prod` runs) as a child process. */
class WorkerProcess {
  readonly output: string[] = [];
  readonly exited: Promise<number | null>;
  private constructor(
    readonly child: ChildProcess,
    readonly port: number,
  ) {
    child.stdout!.on('data', (b: Buffer) => this.output.push(b.toString()));
    child.stderr!.on('data', (b: Buffer) => this.output.push(b.toString()));
    this.exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  }

  static async start(env: Record<string, string>): Promise<WorkerProcess> {
    const port = await freePort();
    const child = spawn(process.execPath, [WORKER_JS], {
      env: { ...process.env, ...env, WORKER_PORT: String(port), LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const w = new WorkerProcess(child, port);
    await waitFor(
      async () => {
        if (child.exitCode !== null) throw new Error(`worker exited with ${child.exitCode}: ${w.output.join('').slice(-2000)}`);
        return fetch(`http://127.0.0.1:${port}/health/ready`).then((r) => r.ok).catch(() => false);
      },
      { timeoutMs: 30_000, intervalMs: 100, label: 'worker /health/ready' },
    );
    return w;
  }

  async kill(signal: NodeJS.Signals): Promise<void> {
    if (this.child.exitCode === null) this.child.kill(signal);
    await this.exited;
  }
}

/**
 * Crash safety (issue 3, docs/architecture.md §8): with 500 events pending, the real compiled worker is killed
 * with SIGKILL while deliveries are in flight (or Redis is flushed mid-way), and every event
 * still reaches the receiver; duplicates are allowed and carry the same webhook-id and bytes.
 */
describe('webhook crash safety (compiled worker processes)', () => {
  let iso: IsolatedEnv;
  let api: TestApp;
  const workers: WorkerProcess[] = [];
  const receivers: WebhookReceiver[] = [];
  let workerEnv: Record<string, string>;

  beforeAll(async () => {
    if (!existsSync(WORKER_JS)) {
      throw new Error(`${WORKER_JS} is missing: build first (node_modules/.bin/nest build, or npm test which builds) — this test runs the compiled worker`);
    }
    iso = await isolatedWebhookEnv('whcrash');
    api = await createTestApp(iso.env);
    workerEnv = { ...iso.env, WEBHOOK_TIMEOUT_MS: '3000', WEBHOOK_RECOVERY_INTERVAL_MS: '500', WEBHOOK_RETRY_SCALE: '0.001' };
  });

  afterAll(async () => {
    for (const w of workers) await w.kill('SIGKILL');
    for (const r of receivers) await r.close();
    await api?.close();
    await iso?.drop();
  });

  /** An organisation with an endpoint on a fresh receiver, and 500 pending events for it. */
  async function scenario() {
    const receiver = await WebhookReceiver.start();
    receivers.push(receiver);
    const org = await createOrg(api.app);
    const put = await api.http.put('/api/v1/webhook-endpoints').set('X-Api-Key', org.key).send({ url: receiver.url() });
    receiver.secrets = [put.body.secret as string];
    const eventIds = await emitEvents(
      api.app,
      org.organizationId,
      Array.from({ length: EVENTS }, (_, i) => ({ type: WebhookEvent.CheckoutFunded, object: { id: `checkout-${i}`, n: i } })),
    );
    expect(eventIds).toHaveLength(EVENTS);
    return { receiver, org, eventIds };
  }

  /** Answers 200 until `after` requests arrived, then holds every answer (deliveries in flight). */
  function holdAfter(receiver: WebhookReceiver, after: number) {
    receiver.respond = () => {
      if (receiver.received.length >= after) receiver.hold();
      return 200;
    };
  }

  async function waitAllDelivered(receiver: WebhookReceiver, orgId: string, eventIds: string[]) {
    await waitFor(
      async () => {
        const rows = await deliveryRows(api.dataSource, orgId);
        return receiver.byWebhookId().size === eventIds.length && rows.length === eventIds.length && rows.every((r) => r.status === 'succeeded');
      },
      {
        timeoutMs: 200_000,
        intervalMs: 250,
        label: 'every event delivered and recorded',
        describe: async () => {
          const rows = await deliveryRows(api.dataSource, orgId);
          const byStatus: Record<string, number> = {};
          for (const r of rows) byStatus[r.status] = (byStatus[r.status] ?? 0) + 1;
          return { unique: receiver.byWebhookId().size, received: receiver.received.length, rows: rows.length, byStatus };
        },
      },
    );
  }

  function expectNoneLost(receiver: WebhookReceiver, eventIds: string[], label: string) {
    const byId = receiver.byWebhookId();
    expect([...byId.keys()].sort()).toEqual([...eventIds].sort());
    for (const [id, copies] of byId) {
      for (const c of copies) {
        expect(c.webhookId).toBe(id);
        expect(c.body!.id).toBe(id);
        expect(c.rawBody).toBe(copies[0].rawBody);
        expect(c.verifiedWith).toEqual([0]);
      }
    }
    const duplicates = receiver.received.length - byId.size;
    console.log(`${label}: events=${eventIds.length} deliveries received=${receiver.received.length} unique=${byId.size} duplicates=${duplicates}`);
    return duplicates;
  }

  /** How many requests the receiver got per webhook id (= event id) so far. */
  function copiesById(receiver: WebhookReceiver): Map<string, number> {
    return new Map([...receiver.byWebhookId()].map(([id, copies]) => [id, copies.length]));
  }

  /**
   * Every copy the receiver got is accounted for: per event, copies = attempts the delivery row
   * recorded + `unrecorded` (attempts a killed worker sent but never recorded). So a duplicate is
   * always a recorded retry or a send cut off by a crash, never a second concurrent send.
   */
  async function expectCopiesAccounted(receiver: WebhookReceiver, orgId: string, unrecorded: Map<string, number> = new Map()) {
    const rows = await deliveryRows(api.dataSource, orgId);
    const attempts = new Map(rows.map((r) => [r.event_id, r.attempts]));
    const received = copiesById(receiver);
    const expected = new Map([...attempts].map(([id, n]) => [id, n + (unrecorded.get(id) ?? 0)]));
    expect(Object.fromEntries(received)).toEqual(Object.fromEntries(expected));
  }

  it('SIGKILL of the worker mid-way: a new worker delivers every event, none lost', async () => {
    const { receiver, org, eventIds } = await scenario();
    holdAfter(receiver, 150);
    const first = await WorkerProcess.start(workerEnv);
    workers.push(first);
    await waitFor(() => receiver.received.length >= 150 && receiver.heldCount >= 10, { timeoutMs: 60_000, label: 'deliveries in flight' });
    await first.kill('SIGKILL');
    receiver.respond = () => 200;
    receiver.release();
    // Requests the killed worker had written may still be in the receiver's socket buffers: count them
    // only once every one of its connections is closed (before, a late one read as a second copy).
    await waitFor(() => receiver.quiet, { timeoutMs: 30_000, label: "the killed worker's connections closed" });

    const before = await deliveryRows(api.dataSource, org.organizationId);
    const succeededAtKill = before.filter((r) => r.status === 'succeeded').length;
    expect(succeededAtKill).toBeLessThan(EVENTS);
    expect(receiver.byWebhookId().size).toBeLessThan(EVENTS);
    // Attempts the killed worker sent but never recorded: each event has at most one (its lease).
    const attemptsAtKill = new Map(before.map((r) => [r.event_id, r.attempts]));
    const unrecorded = new Map([...copiesById(receiver)].map(([id, n]) => [id, n - (attemptsAtKill.get(id) ?? 0)]));
    for (const n of unrecorded.values()) expect([0, 1]).toContain(n);
    const cutOff = [...unrecorded.values()].reduce((a, b) => a + b, 0);
    // At least the held answers were in flight at the kill.
    expect(cutOff).toBeGreaterThanOrEqual(10);

    const second = await WorkerProcess.start(workerEnv);
    workers.push(second);
    await waitAllDelivered(receiver, org.organizationId, eventIds);
    const duplicates = expectNoneLost(receiver, eventIds, `SIGKILL (succeeded at kill: ${succeededAtKill}, cut off: ${cutOff})`);
    await expectCopiesAccounted(receiver, org.organizationId, unrecorded);
    const recorded = (await deliveryRows(api.dataSource, org.organizationId)).reduce((sum, r) => sum + r.attempts, 0);
    expect(duplicates).toBe(recorded - EVENTS + cutOff);
    await second.kill('SIGTERM');
  });

  it('Redis flushed mid-way (this run’s keys only): the worker rebuilds the queue from Postgres and delivers every event', async () => {
    const { receiver, org, eventIds } = await scenario();
    holdAfter(receiver, 150);
    const worker = await WorkerProcess.start(workerEnv);
    workers.push(worker);
    await waitFor(() => receiver.received.length >= 150 && receiver.heldCount >= 10, { timeoutMs: 60_000, label: 'deliveries in flight' });
    const deleted = await iso.flushRedis();
    expect(deleted).toBeGreaterThan(0);
    const pendingAtFlush = (await deliveryRows(api.dataSource, org.organizationId)).filter((r) => r.status !== 'succeeded').length;
    expect(pendingAtFlush).toBeGreaterThan(0);
    receiver.respond = () => 200;
    receiver.release();

    await waitAllDelivered(receiver, org.organizationId, eventIds);
    const duplicates = expectNoneLost(receiver, eventIds, `Redis flush (keys deleted: ${deleted}, undelivered at flush: ${pendingAtFlush})`);
    // No worker died: every copy is a recorded attempt, so duplicates are exactly the recorded retries.
    await expectCopiesAccounted(receiver, org.organizationId);
    const recorded = (await deliveryRows(api.dataSource, org.organizationId)).reduce((sum, r) => sum + r.attempts, 0);
    expect(duplicates).toBe(recorded - EVENTS);
    await worker.kill('SIGTERM');
  });
});
