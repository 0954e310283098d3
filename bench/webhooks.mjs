// Webhook delivery throughput and latency: events written to the outbox, relayed by the compiled
// worker (dist/src/worker.js), signed and POSTed to a local receiver — against a baseline that
// does the same durable work with no framework: one BullMQ queue and one worker process that, per
// delivery, reads nothing it was not given, signs the body with the `standardwebhooks` library,
// POSTs it with undici and records the attempt on a Postgres delivery row (the producer inserts
// the delivery rows in one transaction before enqueueing). `--baseline bare` drops the Postgres
// rows and the signature (the earlier, unfair comparison, kept to show what durability costs).
// Ours additionally goes through the transactional outbox relay (outbox row → delivery rows →
// jobs), which the baseline skips: the ratio charges that hop to us.
//
//   npm run bench -- webhooks [--events 5000] [--paced 1000] [--rate 100] [--warmup 200]
//                             [--concurrency N] [--servers ours,baseline] [--dist DIR]
//                             [--baseline durable|bare]
//
// --concurrency is the baseline worker's (default: ours, DELIVERY_CONCURRENCY); --dist DIR runs
// a compiled tree other than dist/ (e.g. a private copy while others rebuild dist/).
//
// Phases, for each side in turn (the machine has 2 cores; one side runs at a time):
//   warmup  --warmup events at --rate per second (not measured)
//   burst   --events events at once: ours inserts them into outbox_events in one transaction,
//           the baseline adds them to its queue with one addBulk; deliveries/s = events / time
//           from that commit (or addBulk) until the receiver has seen every event
//   paced   --paced events at --rate per second, each in its own transaction (ours) or add
//           (baseline): event-to-receipt latency at a moderate rate
// Latency is measured in this process: from just before the insert (or add) to the receiver
// reading the request. The receiver answers 200 at once; a sample of ours is verified with the
// standardwebhooks library. Database `pcp_bench_webhooks` (dropped, re-created, migrated each
// run), Redis keys under their own prefix (deleted afterwards). Results: a table on stdout and
// bench/results/webhooks-<timestamp>.json.
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { HOST, REDIS_URL, databaseUrl, deleteRedisKeys, dropDatabase, eachFlag, fileStamp, freePort, freshDatabase, guardChildren, isMain, percentile, root, runMain, sleep, startProcess, withPg, writeResult } from './lib.mjs';

const require = createRequire(import.meta.url);
const DB_NAME = 'pcp_bench_webhooks';
const DATABASE_URL = databaseUrl(DB_NAME);
const SIGNER_ENCRYPTION_KEY = 'bench-only-signer-encryption-key-0123456789';
const BASELINE_QUEUE = 'baseline-webhooks';
const BASELINE_DB = 'pcp_bench_webhooks_base';
const BASELINE_SECRET = `whsec_${randomBytes(32).toString('base64')}`;
/** Aims (issue: webhook delivery ≥ 0.8 of a baseline doing the same durable work). */
const AIMS = { throughputRatio: 0.8, pacedP50Ms: 100 };

function parseArgs(args) {
  const opts = { events: 5000, paced: 1000, rate: 100, warmup: 200, concurrency: null, servers: ['ours', 'baseline'], dist: 'dist', baseline: 'durable' };
  for (const { flag, arg, value } of eachFlag(args)) {
    const count = () => {
      const n = Number(value());
      if (!Number.isInteger(n) || n < 0) throw new Error(`${flag} must be a whole number >= 0`);
      return n;
    };
    switch (flag) {
      case '--events': opts.events = count(); break;
      case '--paced': opts.paced = count(); break;
      case '--rate': opts.rate = count(); break;
      case '--warmup': opts.warmup = count(); break;
      case '--concurrency': opts.concurrency = count(); break;
      case '--servers': opts.servers = value().split(','); break;
      case '--dist': opts.dist = value().replace(/\/$/, ''); break;
      case '--baseline': opts.baseline = value(); break;
      default: throw new Error(`unknown flag ${arg} (see the header of bench/webhooks.mjs)`);
    }
  }
  for (const s of opts.servers) if (!['ours', 'baseline'].includes(s)) throw new Error(`unknown server ${s}`);
  if (!['durable', 'bare'].includes(opts.baseline)) throw new Error('--baseline must be durable or bare');
  if (opts.rate < 1) throw new Error('--rate must be >= 1');
  return opts;
}

/** A receiver that answers 200 at once and records when each webhook-id first arrived. */
async function startReceiver() {
  const firstSeen = new Map();
  let requests = 0;
  const sample = [];
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const at = performance.now();
      requests++;
      const id = req.headers['webhook-id'];
      if (!firstSeen.has(id)) firstSeen.set(id, at);
      if (sample.length < 50 && req.headers['webhook-signature']) sample.push({ body: Buffer.concat(chunks).toString('utf8'), headers: { ...req.headers } });
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('ok');
    });
  });
  server.keepAliveTimeout = 10_000;
  await new Promise((resolve) => server.listen(0, HOST, resolve));
  return {
    url: `http://${HOST}:${server.address().port}/hook`,
    firstSeen,
    sample,
    get requests() {
      return requests;
    },
    async waitFor(ids, timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      while (!ids.every((id) => firstSeen.has(id))) {
        if (Date.now() > deadline) throw new Error(`receiver saw ${ids.filter((id) => firstSeen.has(id)).length}/${ids.length} events within ${timeoutMs} ms`);
        await sleep(5);
      }
    },
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(resolve);
    }),
  };
}

/** A realistic event object: a checkout session as the API renders it. */
function eventObject(n) {
  const now = new Date().toISOString();
  return {
    id: randomUUID(), amount: '25.00', description: `Bench order ${n}`, status: 'funded', settlement: 'escrow', orderId: `order-${n}`,
    shopDomain: 'shop.example.com', escrowId: randomUUID(), escrowTemplateId: 'physical', payUrl: `https://pay.example.com/checkout/${n}`,
    redirectUrl: 'https://shop.example.com/thanks', metadata: { sku: 'MUG-1', qty: 1 },
    fee: { source: 'checkout', grossAmount: '25.00', feeAmount: '0.00', netAmount: '25.00', bps: 0, currency: 'USDC' },
    expiresAt: now, createdAt: now, updatedAt: now,
  };
}

function summarize(label, phase, sentAt, receiver, startedAt, finishedAt) {
  const lat = [...sentAt].map(([id, t]) => receiver.firstSeen.get(id) - t).sort((a, b) => a - b);
  const seconds = (finishedAt - startedAt) / 1000;
  return {
    side: label,
    phase,
    events: sentAt.size,
    seconds: Number(seconds.toFixed(3)),
    deliveriesPerSecond: Number((sentAt.size / seconds).toFixed(1)),
    p50Ms: Number(percentile(lat, 50).toFixed(1)),
    p99Ms: Number(percentile(lat, 99).toFixed(1)),
  };
}

/** Drives one side through warmup, burst and paced phases. `send(batch)` returns once the events are committed/enqueued. */
async function drive(label, opts, receiver, send) {
  const results = [];
  const paced = async (n) => {
    const sentAt = new Map();
    const interval = 1000 / opts.rate;
    const start = performance.now();
    const pending = [];
    for (let i = 0; i < n; i++) {
      const due = start + i * interval;
      const wait = due - performance.now();
      if (wait > 1) await sleep(wait);
      const at = performance.now();
      pending.push(send([eventObject(i)]).then(([id]) => sentAt.set(id, at)));
    }
    await Promise.all(pending);
    await receiver.waitFor([...sentAt.keys()], 120_000);
    return { sentAt, start, end: Math.max(...[...sentAt.keys()].map((id) => receiver.firstSeen.get(id))) };
  };
  if (opts.warmup) await paced(opts.warmup);
  if (opts.events) {
    const objects = Array.from({ length: opts.events }, (_, i) => eventObject(i));
    const started = performance.now();
    const ids = await send(objects);
    await receiver.waitFor(ids, 600_000);
    const finished = Math.max(...ids.map((id) => receiver.firstSeen.get(id)));
    results.push(summarize(label, 'burst', new Map(ids.map((id) => [id, started])), receiver, started, finished));
  }
  if (opts.paced) {
    const { sentAt, start, end } = await paced(opts.paced);
    results.push(summarize(label, 'paced', sentAt, receiver, start, end));
  }
  return results;
}

async function runOurs(opts, receiver, redisPrefix) {
  // A local chain, so the worker's readiness (which includes the relayer's balance) means what it says.
  const anvil = await require(join(root, opts.dist, 'libs', 'chain', 'src', 'index.js')).startAnvil({});
  const env = {
    NODE_ENV: 'production', DATABASE_URL, REDIS_URL, REDIS_PREFIX: redisPrefix, LOG_LEVEL: 'warn', SIGNER_ENCRYPTION_KEY,
    WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOW_PRIVATE: 'true', RPC_URL: anvil.rpcUrl, CHAIN_POLL_MS: '60000',
  };
  try {
    return await runOursOnChain(opts, receiver, env);
  } finally {
    await anvil.stop();
  }
}

async function runOursOnChain(opts, receiver, env) {
  await freshDatabase(DB_NAME, opts.dist, env);
  const { SecretBox } = require(join(root, opts.dist, 'src/common/crypto/secret-box.js'));
  const orgId = randomUUID();
  const secret = `whsec_${randomBytes(32).toString('base64')}`;
  await withPg(DB_NAME, async (c) => {
    await c.query(`INSERT INTO organizations (id, name, handle) VALUES ($1, 'Bench', $2)`, [orgId, `bench-${orgId.slice(0, 8)}`]);
    await c.query(`INSERT INTO webhook_endpoints (id, organization_id, url, enabled, secret_sealed) VALUES ($1, $2, $3, true, $4)`, [
      randomUUID(), orgId, receiver.url, new SecretBox(SIGNER_ENCRYPTION_KEY, 'webhook-signing-secret').seal(secret, orgId),
    ]);
  });
  const port = await freePort();
  const worker = await startProcess('worker', [`${opts.dist}/src/worker.js`], { ...env, WORKER_PORT: String(port) }, `http://${HOST}:${port}/health/ready`);
  const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 10 });
  try {
    const send = async (objects) => {
      const ids = objects.map(() => randomUUID());
      await pool.query(
        `INSERT INTO outbox_events (id, organization_id, type, data)
         SELECT id, $2, 'checkout.funded', jsonb_build_object('object', obj) FROM unnest($1::uuid[], $3::jsonb[]) AS t(id, obj)`,
        [ids, orgId, objects.map((o) => JSON.stringify(o))],
      );
      return ids;
    };
    const results = await drive('ours', opts, receiver, send);
    const { Webhook } = require('standardwebhooks');
    const verified = receiver.sample.filter((s) => {
      try {
        new Webhook(secret).verify(s.body, s.headers);
        return true;
      } catch {
        return false;
      }
    }).length;
    if (verified !== receiver.sample.length) throw new Error(`only ${verified}/${receiver.sample.length} sampled deliveries verified`);
    let unrecorded = -1;
    for (const deadline = Date.now() + 30_000; unrecorded !== 0 && Date.now() < deadline; await sleep(100)) {
      unrecorded = (await pool.query(`SELECT count(*)::int AS n FROM webhook_deliveries WHERE status <> 'succeeded'`)).rows[0].n;
    }
    if (unrecorded !== 0) throw new Error(`${unrecorded} deliveries not recorded as succeeded`);
    return { results, verifiedSample: verified };
  } finally {
    await pool.end();
    await worker.stop();
  }
}

async function runBaseline(opts, receiver, redisPrefix) {
  const { Queue } = await import('bullmq');
  const durable = opts.baseline === 'durable';
  if (durable) {
    await dropDatabase(BASELINE_DB);
    await withPg('postgres', (c) => c.query(`CREATE DATABASE ${BASELINE_DB}`));
    // The same shape of durable record as ours (webhook_deliveries): a row per delivery, its status and attempts.
    await withPg(BASELINE_DB, (c) => c.query(`CREATE TABLE deliveries (
      id uuid PRIMARY KEY, url text NOT NULL, body jsonb NOT NULL, status text NOT NULL DEFAULT 'pending',
      attempts int NOT NULL DEFAULT 0, response_status int, created_at timestamptz NOT NULL DEFAULT now(), delivered_at timestamptz)`));
  }
  const env = {
    BENCH_BASELINE_PREFIX: redisPrefix, BENCH_BASELINE_CONCURRENCY: String(opts.concurrency), REDIS_URL,
    BENCH_BASELINE_MODE: opts.baseline, BENCH_BASELINE_DATABASE_URL: databaseUrl(BASELINE_DB), BENCH_BASELINE_SECRET: BASELINE_SECRET,
  };
  const worker = await startProcess('baseline worker', [fileURLToPath(import.meta.url), '--baseline-worker'], env, async (output) => output().includes('baseline worker ready'));
  const queue = new Queue(BASELINE_QUEUE, { connection: { url: REDIS_URL, maxRetriesPerRequest: null }, prefix: redisPrefix });
  const pool = durable ? new pg.Pool({ connectionString: databaseUrl(BASELINE_DB), max: 10 }) : null;
  try {
    const send = async (objects) => {
      const ids = objects.map(() => randomUUID());
      const createdAt = new Date().toISOString();
      const bodies = objects.map((object, i) => JSON.stringify({ id: ids[i], type: 'checkout.funded', createdAt, data: { object } }));
      if (pool) {
        await pool.query(`INSERT INTO deliveries (id, url, body) SELECT id, $2, body FROM unnest($1::uuid[], $3::jsonb[]) AS t(id, body)`, [ids, receiver.url, bodies]);
      }
      await queue.addBulk(
        bodies.map((body, i) => ({
          name: 'deliver',
          data: { url: receiver.url, id: ids[i], body },
          opts: { jobId: ids[i], removeOnComplete: true, removeOnFail: true },
        })),
      );
      return ids;
    };
    const results = await drive('baseline', opts, receiver, send);
    if (pool) {
      let unrecorded = -1;
      for (const deadline = Date.now() + 30_000; unrecorded !== 0 && Date.now() < deadline; await sleep(100)) {
        unrecorded = (await pool.query(`SELECT count(*)::int AS n FROM deliveries WHERE status <> 'succeeded'`)).rows[0].n;
      }
      if (unrecorded !== 0) throw new Error(`baseline: ${unrecorded} deliveries not recorded as succeeded`);
    }
    return { results, mode: opts.baseline };
  } finally {
    await pool?.end();
    await queue.close();
    await worker.stop();
    if (durable) await dropDatabase(BASELINE_DB).catch(() => undefined);
  }
}

/**
 * The baseline's worker process: one BullMQ Worker. Durable mode signs each body with
 * `standardwebhooks` (webhook-id, webhook-timestamp, webhook-signature), POSTs it with undici and
 * records the attempt on its Postgres delivery row; bare mode only POSTs.
 */
async function baselineWorker() {
  const { Worker } = await import('bullmq');
  const { Agent, request } = await import('undici');
  const { Webhook } = require('standardwebhooks');
  const durable = process.env.BENCH_BASELINE_MODE === 'durable';
  const concurrency = Number(process.env.BENCH_BASELINE_CONCURRENCY);
  const signer = new Webhook(process.env.BENCH_BASELINE_SECRET);
  const pool = durable ? new pg.Pool({ connectionString: process.env.BENCH_BASELINE_DATABASE_URL, max: Math.min(concurrency, 20) }) : null;
  const agent = new Agent({ connections: 64, keepAliveTimeout: 4_000 });
  const worker = new Worker(
    BASELINE_QUEUE,
    async (job) => {
      const headers = { 'content-type': 'application/json', 'webhook-id': job.data.id };
      if (durable) {
        const timestamp = new Date();
        headers['webhook-timestamp'] = String(Math.floor(timestamp.getTime() / 1000));
        headers['webhook-signature'] = signer.sign(job.data.id, timestamp, job.data.body);
      }
      const res = await request(job.data.url, { method: 'POST', body: job.data.body, headers, dispatcher: agent, signal: AbortSignal.timeout(15_000) });
      await res.body.dump();
      const ok = res.statusCode >= 200 && res.statusCode < 300;
      if (pool) {
        await pool.query(
          `UPDATE deliveries SET status = $2, attempts = attempts + 1, response_status = $3, delivered_at = CASE WHEN $2 = 'succeeded' THEN now() END WHERE id = $1`,
          [job.data.id, ok ? 'succeeded' : 'failed', res.statusCode],
        );
      }
      if (!ok) throw new Error(`HTTP ${res.statusCode}`);
    },
    { connection: { url: process.env.REDIS_URL, maxRetriesPerRequest: null }, prefix: process.env.BENCH_BASELINE_PREFIX, concurrency },
  );
  await worker.waitUntilReady();
  console.log('baseline worker ready');
  const stop = async () => {
    await worker.close();
    await agent.close();
    await pool?.end();
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

function table(rows) {
  const fmt = (v, w) => String(v ?? '—').padStart(w);
  const lines = [`${'side'.padEnd(10)}${'phase'.padEnd(8)}${fmt('events', 8)}${fmt('seconds', 10)}${fmt('deliv/s', 10)}${fmt('p50 ms', 10)}${fmt('p99 ms', 10)}`];
  for (const r of rows) lines.push(`${r.side.padEnd(10)}${r.phase.padEnd(8)}${fmt(r.events, 8)}${fmt(r.seconds, 10)}${fmt(r.deliveriesPerSecond, 10)}${fmt(r.p50Ms, 10)}${fmt(r.p99Ms, 10)}`);
  return lines.join('\n');
}

/** The delivery processor's concurrency, so the baseline worker gets the same (fallback 100). */
function oursConcurrency(dist) {
  try {
    return require(join(root, dist, 'src/modules/webhooks/delivery/webhook-delivery.processor.js')).DELIVERY_CONCURRENCY ?? 100;
  } catch {
    return 100;
  }
}

/** Entry point for bench/run.mjs (`npm run bench -- webhooks [flags]`). */
export async function main(args = []) {
  const opts = parseArgs(args);
  opts.concurrency ??= oursConcurrency(opts.dist);
  const redisPrefix = `pcpbenchwh${process.pid}`;
  const receiver = await startReceiver();
  const out = { startedAt: new Date().toISOString(), options: opts, sides: {} };
  const releaseChildren = guardChildren();
  try {
    for (const side of opts.servers) {
      console.log(`running ${side}…`);
      out.sides[side] = side === 'ours' ? await runOurs(opts, receiver, `${redisPrefix}o`) : await runBaseline(opts, receiver, `${redisPrefix}b`);
    }
  } finally {
    await receiver.close();
    await deleteRedisKeys(redisPrefix).catch(() => undefined);
    releaseChildren();
  }
  const rows = Object.values(out.sides).flatMap((s) => s.results);
  console.log(`\nwebhooks: ${opts.events} events in a burst, then ${opts.paced} at ${opts.rate}/s; receiver on ${HOST}; concurrency ${opts.concurrency}; baseline ${opts.baseline}`);
  console.log(table(rows));
  const ours = rows.find((r) => r.side === 'ours' && r.phase === 'burst');
  const base = rows.find((r) => r.side === 'baseline' && r.phase === 'burst');
  const oursPaced = rows.find((r) => r.side === 'ours' && r.phase === 'paced');
  if (ours && base) {
    out.ratio = Number((ours.deliveriesPerSecond / base.deliveriesPerSecond).toFixed(3));
    console.log(`\nthroughput ours/baseline: ${out.ratio} (aim ≥ ${AIMS.throughputRatio})`);
  }
  if (oursPaced) console.log(`ours paced p50: ${oursPaced.p50Ms} ms (aim < ${AIMS.pacedP50Ms} ms at ${opts.rate}/s)`);
  out.aims = AIMS;
  const file = writeResult(`webhooks-${fileStamp(new Date(out.startedAt))}.json`, JSON.stringify(out, null, 2));
  console.log(`results: ${file}`);
}

if (isMain(import.meta.url)) {
  if (process.argv.includes('--baseline-worker')) {
    baselineWorker().catch((err) => {
      console.error(err);
      process.exit(1);
    });
  } else {
    runMain(main);
  }
}
