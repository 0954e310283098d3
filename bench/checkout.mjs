// Checkout-session throughput and latency of the api (dist/src/main.js) against two baselines
// (bench/baseline-server.mjs, issue 33, DESIGN §23) on the same schema, database and load:
//   equal  the same work the same way (cached credential + one Redis call, BEGIN/lock/lookup in
//          one round trip, the same statements, the same response)
//   lean   the fewest round trips a correct server needs (create = one autocommit statement)
//
//   npm run bench [-- checkout] [--duration 10] [--connections 10] [--warmup 3] [--blocks 3]
//                 [--baselines equal,lean] [--scenarios create,get] [--network on|off|only]
//                 [--net-connections 1] [--net-delay-ms 1] [--ci]
//                 [--cpu-prof] [--env KEY=VALUE ...] [--dist DIR]
//
// Scenarios:
//   create  POST /api/v1/checkout-sessions with a unique Idempotency-Key per request
//   get     GET  /api/v1/checkout-sessions/{id} over 1,000 pre-seeded sessions of the org
// The statistic: every server runs in ABBA blocks at a fixed concurrency and duration, ours and
// the baselines interleaved (ours, equal, lean, lean, equal, ours), every other block starting
// with the baselines (equal, lean, ours, ours, lean, equal), so drift of the machine or of the
// growing tables favours none. A block's ratio is ours' requests/s over the baseline's (the sum
// of each one's two runs); the figure is the MEDIAN of the blocks' ratios (the same for server
// CPU per request). Every run is printed and kept in the results file; none is left out. The
// servers run one at a time (autocannon takes the other core); any non-2xx fails the run.
//
// Network distance (--network, on by default): the same servers behind a TCP delay proxy in front
// of PostgreSQL and of Redis (bench/delay-proxy.mjs, --net-delay-ms each way, default 1 ms: Node's
// timers cannot schedule 0.5 ms — setTimeout clamps anything below 1 ms to 1 ms — and the proxy
// prints the delay it achieved), at --net-connections (default 1) so the p50 is the round trips,
// not a queue; one ABBA block; the p50 per request of each server is reported.
//
// --ci   the regression guard: one baseline (equal), 2 blocks of 3 s, no network phase; exits 1
//        when create or get falls below 0.5 of the equal baseline (not the aims: CI is noisy).
// The database is `pcp_bench` (dropped, re-created and migrated each run), Redis keys use
// their own prefix. Results: tables on stdout and bench/results/checkout-<timestamp>.json.
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
// Issue 33's aims against the equal baseline: req/s ratio at least these, server CPU per request at
// most CPU_AIM × its; at network distance, our create p50 at most NET_AIM × the lean baseline's.
const AIMS = { create: 0.85, get: 0.9 };
const CPU_AIM = 1.5;
const NET_AIM = 1.5;
// --ci fails below this ratio to the equal baseline (a gross-regression guard, not the aim).
const CI_FLOOR = 0.5;

function parseArgs(args) {
  const opts = {
    duration: 10, connections: 10, warmup: 3, blocks: 3, baselines: ['equal', 'lean'], scenarios: ['create', 'get'], network: 'on',
    netConnections: 1, netDelayMs: 1, ci: false, cpuProf: false, env: {}, dist: 'dist',
  };
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
      case '--blocks': opts.blocks = Math.round(positive(value())); break;
      case '--baselines': opts.baselines = value().split(','); break;
      case '--scenarios': opts.scenarios = value().split(','); break;
      case '--network': opts.network = value(); break;
      case '--net-connections': opts.netConnections = Math.round(positive(value())); break;
      case '--net-delay-ms': opts.netDelayMs = positive(value()); break;
      case '--ci': Object.assign(opts, { ci: true, blocks: 2, duration: 3, warmup: 1, baselines: ['equal'], network: 'off' }); break;
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
  for (const s of opts.baselines) if (!['equal', 'lean'].includes(s)) throw new Error(`unknown baseline ${s}`);
  for (const s of opts.scenarios) if (!['create', 'get'].includes(s)) throw new Error(`unknown scenario ${s}`);
  if (!['on', 'off', 'only'].includes(opts.network)) throw new Error('--network must be on, off or only');
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

/** A plain-text table: the first `left` columns left-aligned, the rest right-aligned. */
function table(header, body, left = 2) {
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => String(b[i]).length)));
  const line = (cells) => cells.map((c, i) => (i < left ? String(c).padEnd(widths[i]) : String(c).padStart(widths[i]))).join('  ');
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)].join('\n');
}

const median = (xs) => {
  const v = xs.filter((x) => x !== null && Number.isFinite(x)).sort((a, b) => a - b);
  if (!v.length) return null;
  const m = Math.floor(v.length / 2);
  return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
};

/** The run order of block `b` (0-based): ABBA, every other block starting with the baselines. */
export function blockOrder(b, baselines) {
  return b % 2 === 0 ? ['ours', ...baselines, ...[...baselines].reverse(), 'ours'] : [...baselines, 'ours', 'ours', ...[...baselines].reverse()];
}

/** Starts one server (ours or a baseline mode) on a free port with `env`; returns { url, pid, stop }. */
async function startServer(server, env, opts, stamp) {
  const port = await freePort();
  const url = `http://${HOST}:${port}`;
  const full = { ...env, API_BASE_URL: url, CHECKOUT_BASE_URL: url, PORT: String(port) };
  let nodeArgs;
  let stopSignal = 'SIGTERM';
  let profDir = null;
  if (server === 'ours') {
    nodeArgs = [`${opts.dist}/src/main.js`];
    if (opts.cpuProf) {
      profDir = join(root, 'bench', 'results', `prof-${stamp}`);
      mkdirSync(profDir, { recursive: true });
      // The api re-raises SIGTERM after closing, which would skip writing the profile; exit cleanly on SIGUSR2 instead.
      nodeArgs = ['--cpu-prof', '--cpu-prof-dir', profDir, '--import', 'data:text/javascript,process.on("SIGUSR2",()=>process.exit(0))', ...nodeArgs];
      stopSignal = 'SIGUSR2';
    }
    Object.assign(full, opts.env);
  } else {
    nodeArgs = ['bench/baseline-server.mjs'];
    full.BASELINE_MODE = server;
  }
  const srv = await startProcess(`${server} server`, nodeArgs, full, `${url}/health/live`, { killAfterMs: 10_000 });
  return { url, pid: srv.pid, profDir, stop: () => srv.stop(stopSignal) };
}

/** Starts bench/delay-proxy.mjs in front of `target` (host:port); returns { port, stop, achieved() }. */
async function startDelayProxy(name, target, delayMs) {
  const p = await startProcess(name, ['bench/delay-proxy.mjs', '--target', target, '--delay-ms', String(delayMs)], {}, async (out) => /listening on \d+/.test(out()));
  const port = Number(/listening on (\d+)/.exec(p.output())[1]);
  return {
    port,
    stop: () => p.stop(),
    achieved: () => {
      const all = [...p.output().matchAll(/achieved p50 ([\d.]+) p99 ([\d.]+) n (\d+)/g)];
      const last = all.at(-1);
      return last ? { p50: Number(last[1]), p99: Number(last[2]), chunks: Number(last[3]) } : null;
    },
  };
}

/**
 * Runs `blocks` ABBA blocks of every scenario against `servers` (started here, stopped after).
 * @returns every run: { phase, block, seq, scenario, server, rps, p50, p99, non2xx, serverCpuUsPerRequest, … }
 */
async function runPhase(phase, { blocks, connections, duration }, servers, env, opts, ctx) {
  const started = {};
  const runs = [];
  try {
    for (const server of servers) started[server] = await startServer(server, env, opts, ctx.stamp);
    const baselines = servers.filter((s) => s !== 'ours');
    for (let block = 0; block < blocks; block++) {
      const order = blockOrder(block, baselines);
      for (const [seq, server] of order.entries()) {
        const srv = started[server];
        for (const scenario of opts.scenarios) {
          const requests = () => scenarioRequests(scenario, ctx.merchantKey, ctx.ids);
          if (opts.warmup > 0) await cannon(srv.url, requests(), connections, opts.warmup);
          await settleDatabase();
          const cpuBefore = cpuMs(srv.pid);
          const raw = await cannon(srv.url, requests(), connections, duration);
          const cpuAfter = cpuMs(srv.pid);
          const r = { phase, block: block + 1, seq: seq + 1, ...summarize(scenario, server, raw, cpuBefore === null || cpuAfter === null ? null : cpuAfter - cpuBefore) };
          runs.push(r);
          console.log(`  ${phase} block ${r.block} #${r.seq} ${scenario.padEnd(6)} ${server.padEnd(5)} ${r.rps.toFixed(1)} req/s  p50 ${r.p50} ms  p99 ${r.p99} ms  non-2xx ${r.non2xx}  server cpu ${r.serverCpuUsPerRequest ?? '?'} µs/req`);
          if (r.non2xx > 0) console.log(`    status codes: ${JSON.stringify(r.statusCodes)}, errors ${r.errors}, timeouts ${r.timeouts}`);
        }
      }
    }
  } finally {
    for (const srv of Object.values(started)) {
      await srv.stop();
      if (srv.profDir) ctx.profDir = srv.profDir;
    }
  }
  return runs;
}

/** Per block, ours over `baseline` (sums of each one's runs in the block): req/s and CPU per request. */
function blockRatios(runs, scenario, baseline) {
  const out = [];
  for (const block of [...new Set(runs.map((r) => r.block))]) {
    const of = (server) => runs.filter((r) => r.block === block && r.scenario === scenario && r.server === server);
    const sum = (rs, f) => rs.reduce((n, r) => n + f(r), 0);
    const ours = of('ours');
    const base = of(baseline);
    if (!ours.length || !base.length) continue;
    const cpu = (rs) => (rs.every((r) => r.serverCpuUsPerRequest !== null) ? sum(rs, (r) => r.serverCpuUsPerRequest) / rs.length : null);
    out.push({ block, rps: sum(ours, (r) => r.rps) / sum(base, (r) => r.rps), cpu: cpu(ours) !== null && cpu(base) ? cpu(ours) / cpu(base) : null });
  }
  return out;
}

export async function main(args) {
  const opts = parseArgs(args);
  const stamp = fileStamp();
  const redisPrefix = `pcp_bench_${Date.now().toString(36)}`;
  const releaseChildren = guardChildren();
  const servers = ['ours', ...opts.baselines];
  const ctx = { stamp, profDir: null };
  let runs = [];
  let netRuns = [];
  let achievedDelay = null;
  try {
    console.log(
      `checkout bench: servers ${servers.join(', ')}; ${opts.blocks} ABBA blocks of ${opts.duration} s per scenario (+${opts.warmup} s warm-up) at ${opts.connections} connections; ` +
        `network phase ${opts.network}; node ${process.version}, ${cpus().length} cpus, load ${loadavg().map((l) => l.toFixed(2)).join(' ')}`,
    );
    Object.assign(ctx, await prepareDatabase(redisPrefix, opts.dist));
    console.log(`database ${DB_NAME} migrated and seeded (organization ${ctx.organizationId}, ${ctx.ids.length} sessions for get)`);
    const serverEnv = {
      NODE_ENV: 'production',
      DATABASE_URL,
      REDIS_URL,
      REDIS_PREFIX: redisPrefix,
      LOG_LEVEL: 'silent',
      RATE_LIMIT_PER_MINUTE: '1000000000',
      RATE_LIMIT_PUBLIC_PER_MINUTE: '1000000000',
    };
    if (opts.network !== 'only') runs = await runPhase('local', opts, servers, serverEnv, opts, ctx);
    if (opts.network !== 'off') {
      const pgUrl = new URL(DATABASE_URL);
      const redisUrl = new URL(REDIS_URL);
      const pgProxy = await startDelayProxy('pg delay proxy', `${pgUrl.hostname}:${pgUrl.port || 5432}`, opts.netDelayMs);
      const redisProxy = await startDelayProxy('redis delay proxy', `${redisUrl.hostname}:${redisUrl.port || 6379}`, opts.netDelayMs);
      try {
        pgUrl.hostname = '127.0.0.1';
        pgUrl.port = String(pgProxy.port);
        redisUrl.hostname = '127.0.0.1';
        redisUrl.port = String(redisProxy.port);
        const env = { ...serverEnv, DATABASE_URL: pgUrl.href, REDIS_URL: redisUrl.href };
        netRuns = await runPhase('network', { blocks: 1, connections: opts.netConnections, duration: opts.duration }, ['ours', 'equal', 'lean'], env, opts, ctx);
      } finally {
        await pgProxy.stop();
        await redisProxy.stop();
        achievedDelay = { postgres: pgProxy.achieved(), redis: redisProxy.achieved() };
      }
    }
  } finally {
    releaseChildren();
  }

  const all = [...runs, ...netRuns];
  console.log('');
  console.log('every run (none left out):');
  console.log(
    table(
      ['phase', 'block', '#', 'scenario', 'server', 'req/s', 'p50 ms', 'p99 ms', 'non-2xx', 'cpu µs/req'],
      all.map((r) => [r.phase, r.block, r.seq, r.scenario, r.server, r.rps.toFixed(1), r.p50, r.p99, r.non2xx, r.serverCpuUsPerRequest ?? '?']),
      5,
    ),
  );
  const ratios = {};
  const cpuRatios = {};
  const blockFigures = {};
  const verdicts = [];
  if (runs.length) {
    console.log('');
    console.log(`statistic: median over ${opts.blocks} ABBA blocks of ours / baseline (requests/s summed over each one's runs in the block), ${opts.connections} connections, ${opts.duration} s per run`);
    for (const baseline of opts.baselines) {
      for (const scenario of opts.scenarios) {
        const blocks = blockRatios(runs, scenario, baseline);
        const key = `${scenario} vs ${baseline}`;
        blockFigures[key] = blocks;
        ratios[key] = median(blocks.map((b) => b.rps));
        cpuRatios[key] = median(blocks.map((b) => b.cpu));
        const aim = baseline === 'equal' ? ` (aim >= ${AIMS[scenario]}: ${ratios[key] >= AIMS[scenario] ? 'met' : 'NOT met'})` : '';
        const cpuAim = baseline === 'equal' && cpuRatios[key] !== null ? ` (aim <= ${CPU_AIM}x: ${cpuRatios[key] <= CPU_AIM ? 'met' : 'NOT met'})` : '';
        console.log(
          `  ${scenario.padEnd(6)} ours/${baseline.padEnd(5)} req/s ${ratios[key].toFixed(2)}${aim}  [blocks ${blocks.map((b) => b.rps.toFixed(2)).join(', ')}]` +
            `   server cpu/req ${cpuRatios[key]?.toFixed(2) ?? '?'}x${cpuAim}`,
        );
        if (opts.ci && baseline === 'equal' && !(ratios[key] >= CI_FLOOR)) verdicts.push(`${key}: ${ratios[key].toFixed(2)} < ${CI_FLOOR}`);
      }
    }
  }
  const netP50 = {};
  if (netRuns.length) {
    console.log('');
    console.log(
      `network distance: delay proxy ${opts.netDelayMs} ms each way in front of PostgreSQL and Redis (achieved p50 ${achievedDelay?.postgres?.p50 ?? '?'} ms / ${achievedDelay?.redis?.p50 ?? '?'} ms), ${opts.netConnections} connection(s); p50 per request, median of each server's runs:`,
    );
    for (const scenario of opts.scenarios) {
      const p = (server) => median(netRuns.filter((r) => r.scenario === scenario && r.server === server).map((r) => r.p50));
      netP50[scenario] = { ours: p('ours'), equal: p('equal'), lean: p('lean') };
      const vsLean = netP50[scenario].ours / netP50[scenario].lean;
      const aim = scenario === 'create' ? ` (aim <= ${NET_AIM}x: ${vsLean <= NET_AIM ? 'met' : 'NOT met'})` : '';
      console.log(`  ${scenario.padEnd(6)} ours ${netP50[scenario].ours} ms  equal ${netP50[scenario].equal} ms  lean ${netP50[scenario].lean} ms  ours/lean ${vsLean.toFixed(2)}x${aim}`);
    }
  }
  console.log(`load average at the end: ${loadavg().map((l) => l.toFixed(2)).join(' ')} (${cpus().length} cpus; other load skews req/s)`);

  const report = {
    benchmark: 'checkout',
    startedAt: stamp,
    node: process.version,
    cpus: cpus().length,
    statistic: 'median over ABBA blocks of ours/baseline requests/s (each side summed over its runs in the block)',
    options: { ...opts },
    results: all,
    ratios,
    serverCpuRatios: cpuRatios,
    blocks: blockFigures,
    network: netRuns.length ? { delayMsEachWay: opts.netDelayMs, achievedDelay, p50: netP50 } : null,
    loadAverage: loadavg(),
    aims: { ...AIMS, serverCpu: CPU_AIM, networkCreateVsLean: NET_AIM, ciFloor: CI_FLOOR },
  };
  const file = writeResult(`checkout-${stamp}.json`, JSON.stringify(report, null, 2) + '\n');
  console.log(`\nresults: ${file}`);
  if (ctx.profDir) console.log(`cpu profile: ${relative(root, ctx.profDir)}`);
  const failed = all.filter((r) => r.non2xx > 0);
  if (failed.length) {
    throw new Error(`non-2xx responses: ${failed.map((r) => `${r.phase} block ${r.block} ${r.scenario} ${r.server}: ${JSON.stringify(r.statusCodes)}`).join('; ')}`);
  }
  if (verdicts.length) throw new Error(`CI guard: below ${CI_FLOOR} of the equal baseline: ${verdicts.join('; ')}`);
  return report;
}
