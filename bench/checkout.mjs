// Checkout-session throughput of the api (dist/src/main.js) against a bare node:http + pg
// baseline (bench/baseline-server.mjs) on the same schema, same database, same load.
//
//   npm run bench [-- checkout] [--duration 10] [--connections 10] [--warmup 3] [--rounds 3]
//                 [--servers ours,baseline] [--scenarios create,get]
//                 [--cpu-prof] [--env KEY=VALUE ...] [--dist DIR]
//
// Scenarios:
//   create  POST /api/v1/checkout-sessions with a unique Idempotency-Key per request
//   get     GET  /api/v1/checkout-sessions/{id} over 1,000 pre-seeded sessions of the org
// The servers run one at a time (the machine has 2 cores; autocannon takes the other one), in
// --rounds rounds whose order alternates (ours, baseline / baseline, ours / …) so drift in the
// machine or the growing table favours neither; each figure is the median over the rounds. Any
// non-2xx response fails the run (a fast error is not a fast request).
// The database is `pcp_bench` (dropped, re-created and migrated each run), Redis keys use
// their own prefix. Results: a table on stdout and bench/results/checkout-<timestamp>.json.
//
// --env KEY=VALUE   extra environment for the api only (scratch experiments)
// --cpu-prof        writes a V8 CPU profile of the api to bench/results/prof-<timestamp>/
// --dist DIR        compiled tree to run instead of dist/ (e.g. a copy, while others rebuild dist/)
import autocannon from 'autocannon';
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join, relative } from 'node:path';
import { HOST, REDIS_URL, databaseUrl, eachFlag, fileStamp, freePort, freshDatabase, guardChildren, root, runNode, startProcess, withPg, writeResult } from './lib.mjs';

// BENCH_DATABASE names another database (two benches on one Postgres must not drop each other's).
const DB_NAME = process.env.BENCH_DATABASE ?? 'pcp_bench';
const DATABASE_URL = databaseUrl(DB_NAME);
const COLLECTION = '/api/v1/checkout-sessions';
const GET_IDS = 1000;
// Issue 19's aims: req/s ratio at least these, server CPU per request at most CPU_AIM × the baseline's.
const AIMS = { create: 0.8, get: 0.85 };
const CPU_AIM = 1.6;

function parseArgs(args) {
  const opts = { duration: 10, connections: 10, warmup: 3, rounds: 3, servers: ['ours', 'baseline'], scenarios: ['create', 'get'], cpuProf: false, env: {}, dist: 'dist' };
  for (const { flag, arg, value } of eachFlag(args)) {
    const positive = (v) => {
      const n = Number(v);
      if (!Number.isFinite(n) || n <= 0) throw new Error(`${flag} must be a positive number`);
      return n;
    };
    switch (flag) {
      case '--duration': opts.duration = positive(value()); break;
      case '--connections': opts.connections = Math.round(positive(value())); break;
      case '--warmup': opts.warmup = Number(value()); break;
      case '--rounds': opts.rounds = Math.round(positive(value())); break;
      case '--servers': opts.servers = value().split(','); break;
      case '--scenarios': opts.scenarios = value().split(','); break;
      case '--cpu-prof': opts.cpuProf = true; break;
      case '--dist': opts.dist = value().replace(/\/$/, ''); break;
      case '--env': {
        const [k, v] = value().split(/=(.*)/s, 2);
        opts.env[k] = v ?? '';
        break;
      }
      default: throw new Error(`unknown flag ${arg} (see the header of bench/checkout.mjs)`);
    }
  }
  for (const s of opts.servers) if (!['ours', 'baseline'].includes(s)) throw new Error(`unknown server ${s}`);
  for (const s of opts.scenarios) if (!['create', 'get'].includes(s)) throw new Error(`unknown scenario ${s}`);
  if (!(opts.warmup >= 0)) throw new Error('--warmup must be >= 0');
  return opts;
}

/** CPU time (user + system) a process has used so far, in ms; null where /proc is unavailable. */
function cpuMs(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime + stime, in USER_HZ (100/s)
  } catch {
    return null;
  }
}

/** Fresh pcp_bench: drop, create, migrate with the compiled migrator, seed the demo org and merchant key. */
async function prepareDatabase(redisPrefix, dist) {
  const env = { DATABASE_URL, REDIS_URL, REDIS_PREFIX: redisPrefix, LOG_LEVEL: 'silent' };
  await freshDatabase(DB_NAME, dist, env);
  const out = await runNode([`${dist}/src/cli.js`, 'demo:seed', '--json'], env);
  const seed = JSON.parse(out.slice(out.indexOf('{'), out.lastIndexOf('}') + 1));
  if (!seed.merchantKey || !seed.organizationId) throw new Error(`demo:seed printed no merchantKey/organizationId: ${out}`);
  // Sessions for the GET scenario, the same rows for both servers.
  const ids = await withPg(DB_NAME, async (c) => {
    await c.query(
      `INSERT INTO checkout_sessions (id, organization_id, amount_units, description, status, escrow_template_id, expires_at)
       SELECT gen_random_uuid(), $1, 25000000, 'Bench order ' || g, 'open', 'custom', now() + interval '24 hours'
       FROM generate_series(1, $2) g`,
      [seed.organizationId, GET_IDS],
    );
    const { rows } = await c.query('SELECT id FROM checkout_sessions WHERE organization_id = $1', [seed.organizationId]);
    return rows.map((r) => r.id);
  });
  return { merchantKey: seed.merchantKey, organizationId: seed.organizationId, ids };
}

/** Keeps autovacuum and checkpoints of earlier runs out of the measurement as far as possible. */
async function settleDatabase() {
  await withPg(DB_NAME, async (c) => {
    await c.query('VACUUM ANALYZE checkout_sessions, idempotency_records');
    await c.query('CHECKPOINT').catch(() => {});
  });
}

function scenarioRequests(scenario, merchantKey, ids) {
  const headers = { 'x-api-key': merchantKey };
  if (scenario === 'create') {
    return [
      {
        method: 'POST',
        path: COLLECTION,
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify({ amount: '25.00', description: 'Bench order', orderId: 'bench-1' }),
        // A unique Idempotency-Key per request.
        setupRequest: (req) => ({ ...req, headers: { ...req.headers, 'idempotency-key': `bench-${randomUUID()}` } }),
      },
    ];
  }
  let next = 0;
  return [
    {
      method: 'GET',
      path: `${COLLECTION}/${ids[0]}`,
      headers,
      setupRequest: (req) => ({ ...req, path: `${COLLECTION}/${ids[next++ % ids.length]}` }),
    },
  ];
}

function cannon(url, requests, connections, duration) {
  return autocannon({ url, connections, duration, requests, timeout: 10 });
}

function summarize(scenario, server, r, cpu) {
  return {
    scenario,
    server,
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    non2xx: r.non2xx + r.errors + r.timeouts,
    requests: r.requests.total,
    statusCodes: r.statusCodeStats,
    errors: r.errors,
    timeouts: r.timeouts,
    latencyAvg: r.latency.average,
    // CPU of the server process per request (µs): less sensitive than req/s to other load on the machine.
    serverCpuUsPerRequest: cpu === null || !r.requests.total ? null : Math.round((cpu * 1000) / r.requests.total),
  };
}

function table(rows) {
  const header = ['scenario', 'server', 'requests/s', 'p50 ms', 'p99 ms', 'non-2xx', 'server cpu µs/req'];
  const body = rows.map((r) => [r.scenario, r.server, `${r.rps.toFixed(1)} [${(r.rounds ?? []).join(', ')}]`, String(r.p50), String(r.p99), String(r.non2xx), String(r.serverCpuUsPerRequest ?? '?')]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (cells) => cells.map((c, i) => (i < 2 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ');
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)].join('\n');
}

export async function main(args) {
  const opts = parseArgs(args);
  const stamp = fileStamp();
  const redisPrefix = `pcp_bench_${Date.now().toString(36)}`;
  const releaseChildren = guardChildren();

  const results = [];
  let profDir;
  try {
    console.log(`checkout bench: ${opts.connections} connections, ${opts.duration} s per scenario (+${opts.warmup} s warm-up), node ${process.version}, ${cpus().length} cpus`);
    const { merchantKey, organizationId, ids } = await prepareDatabase(redisPrefix, opts.dist);
    console.log(`database ${DB_NAME} migrated and seeded (organization ${organizationId}, ${ids.length} sessions for get)`);

    const serverEnv = {
      NODE_ENV: 'production',
      DATABASE_URL,
      REDIS_URL,
      REDIS_PREFIX: redisPrefix,
      LOG_LEVEL: 'silent',
      RATE_LIMIT_PER_MINUTE: '1000000000',
      RATE_LIMIT_PUBLIC_PER_MINUTE: '1000000000',
    };
    for (let round = 1; round <= opts.rounds; round++) {
      const order = round % 2 === 1 ? opts.servers : [...opts.servers].reverse();
      for (const server of order) {
        const port = await freePort();
        const url = `http://${HOST}:${port}`;
        const env = { ...serverEnv, API_BASE_URL: url, CHECKOUT_BASE_URL: url };
        let nodeArgs;
        let stopSignal = 'SIGTERM';
        if (server === 'ours') {
          nodeArgs = [`${opts.dist}/src/main.js`];
          if (opts.cpuProf) {
            profDir = join(root, 'bench', 'results', `prof-${stamp}`);
            mkdirSync(profDir, { recursive: true });
            // The api re-raises SIGTERM after closing, which would skip writing the profile; exit cleanly on SIGUSR2 instead.
            nodeArgs = ['--cpu-prof', '--cpu-prof-dir', profDir, '--import', 'data:text/javascript,process.on("SIGUSR2",()=>process.exit(0))', ...nodeArgs];
            stopSignal = 'SIGUSR2';
          }
          Object.assign(env, opts.env);
        } else {
          nodeArgs = ['bench/baseline-server.mjs'];
        }
        const srv = await startProcess(`${server} server`, nodeArgs, { ...env, PORT: String(port) }, `${url}/health/live`, { killAfterMs: 10_000 });
        try {
          for (const scenario of opts.scenarios) {
            const requests = scenarioRequests(scenario, merchantKey, ids);
            if (opts.warmup > 0) await cannon(url, requests, opts.connections, opts.warmup);
            await settleDatabase();
            const cpuBefore = cpuMs(srv.pid);
            const raw = await cannon(url, scenarioRequests(scenario, merchantKey, ids), opts.connections, opts.duration);
            const cpuAfter = cpuMs(srv.pid);
            const r = { round, ...summarize(scenario, server, raw, cpuBefore === null || cpuAfter === null ? null : cpuAfter - cpuBefore) };
            results.push(r);
            console.log(`  round ${round} ${scenario.padEnd(6)} ${server.padEnd(8)} ${r.rps.toFixed(1)} req/s  p50 ${r.p50} ms  p99 ${r.p99} ms  non-2xx ${r.non2xx}  server cpu ${r.serverCpuUsPerRequest ?? '?'} µs/req`);
            if (r.non2xx > 0) console.log(`    status codes: ${JSON.stringify(r.statusCodes)}, errors ${r.errors}, timeouts ${r.timeouts}`);
          }
        } finally {
          await srv.stop(stopSignal);
        }
      }
    }
  } finally {
    releaseChildren();
  }

  const order = { create: 0, get: 1 };
  const medians = [];
  for (const scenario of opts.scenarios) {
    for (const server of opts.servers) {
      const runs = results.filter((r) => r.scenario === scenario && r.server === server);
      if (runs.length === 0) continue;
      const med = (f) => {
        const v = runs.map(f).filter((x) => x !== null).sort((a, b) => a - b);
        return v.length ? v[Math.floor((v.length - 1) / 2)] : null;
      };
      medians.push({
        scenario,
        server,
        rounds: runs.map((r) => Math.round(r.rps)),
        rps: med((r) => r.rps),
        p50: med((r) => r.p50),
        p99: med((r) => r.p99),
        non2xx: runs.reduce((n, r) => n + r.non2xx, 0),
        serverCpuUsPerRequest: med((r) => r.serverCpuUsPerRequest),
      });
    }
  }
  medians.sort((a, b) => order[a.scenario] - order[b.scenario] || (a.server === 'ours' ? -1 : 1));
  const ratios = {};
  const cpuRatios = {};
  for (const scenario of opts.scenarios) {
    const ours = medians.find((r) => r.scenario === scenario && r.server === 'ours');
    const base = medians.find((r) => r.scenario === scenario && r.server === 'baseline');
    if (ours && base && base.rps > 0) ratios[scenario] = ours.rps / base.rps;
    if (ours?.serverCpuUsPerRequest && base?.serverCpuUsPerRequest) cpuRatios[scenario] = ours.serverCpuUsPerRequest / base.serverCpuUsPerRequest;
  }
  console.log('');
  console.log(`medians of ${opts.rounds} rounds (per-round req/s in brackets):`);
  console.log(table(medians));
  console.log('');
  for (const [scenario, ratio] of Object.entries(ratios)) {
    const aim = AIMS[scenario];
    console.log(`ratio ours/baseline req/s  ${scenario.padEnd(6)} ${ratio.toFixed(2)}  (aim >= ${aim}: ${ratio >= aim ? 'met' : 'NOT met'})`);
  }
  for (const [scenario, ratio] of Object.entries(cpuRatios)) {
    console.log(`server cpu per request, ours/baseline  ${scenario.padEnd(6)} ${ratio.toFixed(2)}x  (aim <= ${CPU_AIM}x: ${ratio <= CPU_AIM ? 'met' : 'NOT met'})`);
  }
  console.log(`load average at the end: ${loadavg().map((l) => l.toFixed(2)).join(' ')} (${cpus().length} cpus; other load skews req/s)`);

  const report = {
    benchmark: 'checkout',
    startedAt: stamp,
    node: process.version,
    cpus: cpus().length,
    options: { duration: opts.duration, connections: opts.connections, warmup: opts.warmup, rounds: opts.rounds, env: opts.env, cpuProf: opts.cpuProf, dist: opts.dist },
    results,
    medians,
    ratios,
    serverCpuRatios: cpuRatios,
    loadAverage: loadavg(),
    aims: { ...AIMS, serverCpu: CPU_AIM },
  };
  const file = writeResult(`checkout-${stamp}.json`, JSON.stringify(report, null, 2) + '\n');
  console.log(`\nresults: ${file}`);
  if (profDir) console.log(`cpu profile: ${relative(root, profDir)}`);
  const failed = results.filter((r) => r.non2xx > 0);
  if (failed.length) {
    throw new Error(`non-2xx responses: ${failed.map((r) => `round ${r.round} ${r.scenario} ${r.server}: ${JSON.stringify(r.statusCodes)}`).join('; ')}`);
  }
  return report;
}
