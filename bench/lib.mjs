// Plumbing shared by the benchmarks (bench/<name>.mjs): node child processes, fresh databases,
// Redis clean-up, free ports, flags, percentiles and result files. Nothing here measures anything.
// Postgres and Redis come from BENCH_PG_URL (default postgres://postgres@127.0.0.1:5432) and
// BENCH_REDIS_URL (default redis://127.0.0.1:6379).
import { spawn } from 'node:child_process';
import { createWriteStream, mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import pg from 'pg';

/** The repository root: children run with it as cwd, and `--dist DIR` is relative to it. */
export const root = join(dirname(fileURLToPath(import.meta.url)), '..');
/** The address every server of a benchmark listens on. */
export const HOST = '127.0.0.1';
/** The Postgres server, without a database name. */
export const PG_BASE = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432';
/** The Redis the benchmarks use (keys under a per-run prefix). */
export const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';

const NODE = process.execPath;
const children = new Set();

/** Resolves after `ms` milliseconds. */
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Iterates `--flag value` / `--flag=value` arguments as `{ flag, arg, value }`: `arg` is the raw
 * argument, `value()` consumes the flag's value (inline or the next argument) and throws if there is none.
 */
export function* eachFlag(args) {
  for (let i = 0; i < args.length; i++) {
    const [flag, inline] = args[i].split(/=(.*)/s, 2);
    const value = () => {
      const v = inline ?? args[++i];
      if (v === undefined) throw new Error(`${flag} needs a value`);
      return v;
    };
    yield { flag, arg: args[i], value };
  }
}

/** Spawns node (cwd: root, `env` over process.env, output piped) and tracks it until it exits. */
function spawnNode(args, env) {
  const child = spawn(NODE, args, { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  child.on('exit', () => children.delete(child));
  return child;
}

/** Runs a node script to completion; resolves with its stdout, rejects with its output on a non-zero exit. */
export function runNode(args, env) {
  return new Promise((resolve, reject) => {
    const child = spawnNode(args, env);
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (code === 0) resolve(out);
      else reject(new Error(`node ${args.join(' ')} exited with ${code ?? signal}:\n${err}${out}`));
    });
  });
}

/** True once GET `url` answers 2xx within a second. */
async function answers(url) {
  const r = await fetch(url, { signal: AbortSignal.timeout(1000) });
  await r.arrayBuffer();
  return r.ok;
}

/**
 * Starts a long-running node process and waits up to 60 s until it is ready: `ready` is a URL that
 * must answer 2xx, or an async predicate given `output()` (the last 8,000 characters it printed).
 * Returns `{ pid, output(), stop(signal = 'SIGTERM') }`; stop sends SIGKILL after `killAfterMs`.
 */
export async function startProcess(name, args, env, ready, { killAfterMs = 15_000 } = {}) {
  const child = spawnNode(args, env);
  let output = '';
  // BENCH_LOG_DIR keeps each process's whole output in <dir>/<name>.log for a run that needs reading afterwards.
  const file = process.env.BENCH_LOG_DIR ? createWriteStream(join(process.env.BENCH_LOG_DIR, `${name.replace(/\W+/g, '-')}.log`), { flags: 'a' }) : null;
  const keep = (d) => {
    output = (output + d).slice(-8000);
    file?.write(d);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve(code ?? signal)));
  const isReady = typeof ready === 'string' ? () => answers(ready) : () => ready(() => output);
  const deadline = Date.now() + 60_000;
  while (!(await isReady().catch(() => false))) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${name} exited during start-up:\n${output}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${name} ${typeof ready === 'string' ? `did not answer ${ready}` : 'was not ready'} within 60 s:\n${output}`);
    }
    await sleep(100);
  }
  return {
    pid: child.pid,
    output: () => output,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Sends `signal` to every child started by runNode/startProcess that is still running. */
export function killChildren(signal = 'SIGKILL') {
  for (const child of children) {
    try {
      child.kill(signal);
    } catch {
      /* already gone */
    }
  }
}

/**
 * Kills the children (SIGKILL) when this process exits, or on SIGINT/SIGTERM (then exits 130/143).
 * Returns `release()`: kills whatever is still running and removes the handlers.
 */
export function guardChildren() {
  const onSignal = (sig) => {
    killChildren();
    process.exit(sig === 'SIGINT' ? 130 : 143);
  };
  const onExit = () => killChildren();
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.on('exit', onExit);
  return () => {
    killChildren();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    process.off('exit', onExit);
  };
}

/** Whether the module at `metaUrl` (its `import.meta.url`) is the script node was started with. */
export const isMain = (metaUrl) => Boolean(process.argv[1]) && metaUrl === pathToFileURL(process.argv[1]).href;

/** Runs a script's `main(args)` with the command line's arguments: exit 0 once it resolves; on a throw, print it, kill the children, exit 1. */
export function runMain(main) {
  main(process.argv.slice(2)).then(
    () => process.exit(0),
    (err) => {
      console.error(err?.stack ?? err);
      killChildren();
      process.exit(1);
    },
  );
}

/**
 * Starts api number `n` (`<dist>/src/main.js`) on a free port with `env` plus PORT, API_BASE_URL and
 * CHECKOUT_BASE_URL (its own address unless `env` names them: replicas behind one public origin),
 * ready once /health/ready answers 2xx; pushes its stop onto `stops`.
 * Returns its base URL.
 */
export async function startApi(n, dist, env, stops) {
  const port = await freePort();
  const base = `http://${HOST}:${port}`;
  // Replicas behind one load balancer share one public origin: an env naming API_BASE_URL keeps it.
  const publicBase = env.API_BASE_URL ?? base;
  const p = await startProcess(`api ${n}`, [`${dist}/src/main.js`], { ...env, PORT: String(port), API_BASE_URL: publicBase, CHECKOUT_BASE_URL: env.CHECKOUT_BASE_URL ?? publicBase }, `${base}/health/ready`);
  stops.push(() => p.stop());
  return base;
}

/** Starts worker number `n` (`<dist>/src/worker.js`) on a free WORKER_PORT, ready once its /health/ready answers; pushes its stop onto `stops`. Returns the process (as {@link startProcess}). */
export async function startWorker(n, dist, env, stops) {
  const port = await freePort();
  const p = await startProcess(`worker ${n}`, [`${dist}/src/worker.js`], { ...env, WORKER_PORT: String(port) }, `http://${HOST}:${port}/health/ready`);
  stops.push(() => p.stop());
  return p;
}

/**
 * Takes a multi-process run down, last started first: every stop in `stops` (errors ignored), the
 * provider, anvil, the webhook receiver, then the run's database and Redis keys (errors ignored).
 */
export async function tearDown({ stops, provider, anvil, receiver, database, redisPrefix }) {
  for (const stop of stops.reverse()) await stop().catch(() => {});
  provider?.destroy();
  if (anvil) await anvil.stop();
  await receiver.close();
  await dropDatabase(database).catch(() => {});
  await deleteRedisKeys(redisPrefix).catch(() => {});
}

/** A TCP port that was free on HOST a moment ago. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, HOST, () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** The connection URL of `database` on the benchmark Postgres. */
export const databaseUrl = (database) => `${PG_BASE}/${database}`;

/** Runs `fn(client)` on a new connection to `database` and closes it afterwards. */
export async function withPg(database, fn) {
  const client = new pg.Client({ connectionString: databaseUrl(database) });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** Drops `database` if it exists, ending its connections. */
export async function dropDatabase(database) {
  await withPg('postgres', (c) => c.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`));
}

/** Drops and re-creates `database`, then migrates it with `${dist}/src/database/migrate.js` under `env` (its DATABASE_URL). */
export async function freshDatabase(database, dist, env) {
  await dropDatabase(database);
  await withPg('postgres', (c) => c.query(`CREATE DATABASE ${database}`));
  await runNode([`${dist}/src/database/migrate.js`], env);
}

/** Deletes the Redis keys under `prefix` (SCAN + DEL; never FLUSHALL, the Redis is shared). */
export async function deleteRedisKeys(prefix) {
  const { default: Redis } = await import('ioredis');
  const redis = new Redis(REDIS_URL);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      if (keys.length) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

/** The nearest-rank `p`th percentile of ascending `sorted` (null when empty). */
export function percentile(sorted, p) {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/** `date` as an ISO timestamp usable in a file name (`:` and `.` become `-`). */
export const fileStamp = (date = new Date()) => date.toISOString().replace(/[:.]/g, '-');

/** Writes `text` to bench/results/`fileName` (creating the folder); returns its path relative to root. */
export function writeResult(fileName, text) {
  const file = join(root, 'bench', 'results', fileName);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, text);
  return relative(root, file);
}

/** One JSON call to the api (`key` as X-Api-Key); throws with the status and body unless 2xx. */
export async function api(base, method, path, { key, body } = {}) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { ...(key ? { 'x-api-key': key } : {}), ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const json = await res.json();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}
