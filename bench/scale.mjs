// Cost as data grows (issue 33, DESIGN §23): grows the tables the way traffic would and measures,
// at each size, the per-request latency of the read and write paths and the time per batch of the
// background passes. Aims: every per-request p50 and every pass's time per batch grows at most
// 1.5× from the first size to the last (`--short`: 10k → 100k, fails above 2×; meant to take at
// most ~3 min on an idle 2-core machine; `--ci`: 10k → 50k, 60 requests per figure and every pass's
// backlog a fifth (outbox 20k, open escrows 2k, recent payments 20k, idle payments 2k, indexer 500
// events), only the last size measured beside the reference (no noise column), fails above 2×:
// sized for CI's shared 2 cores). Each figure's line ends with its wall time in seconds.
//
//   npm run bench:scale [-- --sizes 10000,100000,1000000] [--requests 300] [--short | --ci] [--dist DIR]
//
// Seeding (bulk SQL with generate_series, no api calls): per size step, every table of a request
// path gets rows up to the size (checkout_sessions, outbox_events + webhook_deliveries, escrows,
// payments, idempotency_records, balance_transactions when the table exists: 60 % escrow releases,
// 25 % agent payments, 8 % x402, 7 % refunds, as the indexers and the refund watcher write them):
// half of them belong to ONE large organisation (and its one
// agent), which every request measures (the worst case), the other half spread over 200 small
// organisations. Times are spread over the past 365 days (ids are UUIDv7 of that time), states
// as a live system has them (mostly terminal; a few open/retrying).
//
// Per request (the compiled api on a free port, `--requests` sequential requests after a warm-up;
// p50 and p99 client-side): checkout list (first page; 20 keyset pages deep), checkout get,
// checkout create, webhook deliveries list, escrows list, agent payments list, balance
// transactions list (first page, 20 keyset pages deep, type=refund; only when the table exists:
// skipped otherwise).
//
// The statistic: a REFERENCE database is kept at the first size, with its own api, and every
// figure is measured on both databases interleaved (call by call, batch by batch, A B B A), so
// the aim's ratio — p50 at the largest size over the reference's p50 measured beside it — compares
// sizes under the same machine load (the machine may be shared; sizes measured minutes apart
// would compare two loads). The first size's ratio (two databases of the same size) is printed
// as the noise of the measurement.
//
// Per pass, with its backlog added for the pass and removed afterwards, each time per batch
// measured on the project's own compiled repositories (not copies of their SQL):
//   outbox relay      100k pending events; RELAY_BATCH events claimed + deliveries inserted +
//                     marked relayed per batch (`--relay-batches` batches of the drain)
//   retention         the seeded table is the backlog (≈ 92 % of events older than 30 days):
//                     one webhook retention batch (5,000 events with their deliveries) and one
//                     idempotency reaper batch, each in a transaction rolled back afterwards
//   reconciliation    10k open (funded) escrows and 100k payments ended in the last 7 days: the
//                     ledger reads of one pass (a batch of RECONCILE_BATCH held escrows and of
//                     ended payments, each from its cursor, and the held sum), 5 consecutive batches
//                     (`--ci`: 3)
//   payment sweep     10k idle pending payments: one sweep selection (PaymentsRepository.idle)
//   indexer catch-up  APPROXIMATED: the chain part (eth_getLogs) is left out; the database part
//                     of applying `delivered` events to funded escrows, with the statements the
//                     projector issues per event (escrow by key FOR UPDATE, the duplicate check,
//                     the escrow's events, the event insert, the escrow update), one transaction
//                     per event, timed per 100 events over 10k events (`--short`: 1k)
//
// The database is `pcp_scale` (BENCH_SCALE_DATABASE), dropped and re-created; results go to
// bench/results/scale-<timestamp>.json. Figures on a shared machine are noisy: the ratios are
// measured in one run, on the same machine state, which is what the aims compare.
import { createRequire } from 'node:module';
import { randomUUID } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { HOST, REDIS_URL, databaseUrl, deleteRedisKeys, eachFlag, fileStamp, freePort, freshDatabase, guardChildren, dropDatabase, isMain, percentile, root, runMain, startProcess, writeResult } from './lib.mjs';

const DB_NAME = process.env.BENCH_SCALE_DATABASE ?? 'pcp_scale';
const DATABASE_URL = databaseUrl(DB_NAME);
const SMALL_ORGS = 200;
// The passes' backlogs (issue 33); `--ci` shrinks them (each still several batches deep).
const BACKLOGS = { outbox: 100_000, openEscrows: 10_000, recentPayments: 100_000, idlePayments: 10_000 };
// Reconciliation's batch (RECONCILE_BATCH's default, src/config/env.schema.ts).
const RECONCILE_BATCH = 500;

function parseArgs(args) {
  const opts = { lastOnly: false, sizes: [10_000, 100_000, 1_000_000], requests: 300, warmup: 30, relayBatches: 10, indexerEvents: 10_000, aim: 1.5, short: false, ci: false, backlogs: BACKLOGS, dist: 'dist', keep: false };
  for (const { flag, arg, value } of eachFlag(args)) {
    switch (flag) {
      case '--sizes': opts.sizes = value().split(',').map(Number); break;
      case '--requests': opts.requests = Number(value()); break;
      case '--relay-batches': opts.relayBatches = Number(value()); break;
      case '--indexer-events': opts.indexerEvents = Number(value()); break;
      case '--dist': opts.dist = value().replace(/\/$/, ''); break;
      case '--keep': opts.keep = true; break;
      case '--short':
        Object.assign(opts, { short: true, sizes: [10_000, 100_000], requests: 100, warmup: 15, relayBatches: 5, indexerEvents: 1_000, aim: 2 });
        break;
      case '--ci':
        Object.assign(opts, {
          ci: true, lastOnly: true, sizes: [10_000, 50_000], requests: 60, warmup: 10, relayBatches: 3, indexerEvents: 500, aim: 2,
          backlogs: { outbox: 20_000, openEscrows: 2_000, recentPayments: 20_000, idlePayments: 2_000 },
        });
        break;
      default: throw new Error(`unknown flag ${arg} (see the header of bench/scale.mjs)`);
    }
  }
  if (opts.sizes.length < 2 || opts.sizes.some((s) => !(s >= 1000))) throw new Error('--sizes needs at least two sizes >= 1000');
  return opts;
}

/** A UUIDv7 for a timestamp, in SQL (PostgreSQL 15 has no uuidv7()): time-ordered like the app's ids (DESIGN §6). */
const UUID7_FN = `
CREATE OR REPLACE FUNCTION pg_temp.uuid7_at(ts timestamptz) RETURNS uuid LANGUAGE sql VOLATILE AS $$
  SELECT (lpad(to_hex((extract(epoch FROM ts) * 1000)::bigint), 12, '0') || '7' || substr(md5(random()::text), 1, 3)
          || to_hex(8 + floor(random() * 4)::int) || substr(md5(random()::text), 1, 15))::uuid
$$`;

/** Organisations, agents, the big organisation's endpoint and keys. Returns the ids and secrets the requests use. */
async function seedParties(c, dist) {
  const require = createRequire(join(root, dist, 'src', 'main.js'));
  const { MERCHANT_SCOPES, AGENT_SCOPES } = require('./kernel/auth/scopes.js');
  const { MERCHANT_KEY_PREFIX, AGENT_KEY_PREFIX } = require('./modules/orgs/orgs.service.js');
  const { randomBase62 } = require('./kernel/auth/secrets.js');
  const big = randomUUID();
  const bigAgent = randomUUID();
  await c.query(`INSERT INTO organizations (id, name, handle) VALUES ($1, 'Big merchant', 'scale-big')`, [big]);
  await c.query(
    `INSERT INTO organizations (id, name, handle) SELECT gen_random_uuid(), 'Small ' || g, 'scale-small-' || g FROM generate_series(1, $1) g`,
    [SMALL_ORGS],
  );
  await c.query(`CREATE TABLE scale_orgs AS SELECT row_number() OVER (ORDER BY id) - 1 AS n, id FROM organizations WHERE handle LIKE 'scale-small-%'`);
  await c.query(`INSERT INTO agents (id, organization_id, slug, owner_address) VALUES ($1, $2, 'scale-big-agent', '0x' || repeat('1', 40))`, [bigAgent, big]);
  await c.query(
    `INSERT INTO agents (id, organization_id, slug, owner_address) SELECT gen_random_uuid(), id, 'scale-agent-' || n, '0x' || repeat('2', 40) FROM scale_orgs`,
  );
  await c.query(`CREATE TABLE scale_agents AS SELECT o.n, a.id, a.organization_id FROM scale_orgs o JOIN agents a ON a.organization_id = o.id`);
  await c.query(`INSERT INTO webhook_endpoints (id, organization_id, url, secret_sealed) VALUES (gen_random_uuid(), $1, 'http://127.0.0.1:9/hook', 'bench')`, [big]);
  const merchantKey = MERCHANT_KEY_PREFIX + randomBase62(32);
  const agentKey = AGENT_KEY_PREFIX + randomBase62(32);
  const insertKey = `INSERT INTO api_keys (id, organization_id, agent_id, kind, display_prefix, secret_hash, scopes)
                     VALUES (gen_random_uuid(), $1, $2, $3, $4, sha256(convert_to($5, 'UTF8')), $6)`;
  await c.query(insertKey, [big, null, 'merchant', merchantKey.slice(0, 18), merchantKey, [...MERCHANT_SCOPES]]);
  await c.query(insertKey, [big, bigAgent, 'agent', agentKey.slice(0, 24), agentKey, [...AGENT_SCOPES]]);
  return { big, bigAgent, merchantKey, agentKey };
}

/**
 * Adds rows g = from+1 … to of every request table. Even g: the big organisation (its agent);
 * odd g: small organisation (g/2) mod 200. created_at uniform over the past 365 days.
 */
async function grow(c, { big, bigAgent }, from, to) {
  const p = [from + 1, to, big, bigAgent, SMALL_ORGS];
  // The small parties by position in arrays built once per statement (an uncorrelated sub-select), not a look-up per row.
  const series = `SELECT g, t, r,
                         CASE WHEN g % 2 = 0 THEN $3::uuid ELSE o.a[1 + (g / 2) % $5] END AS org,
                         CASE WHEN g % 2 = 0 THEN $4::uuid ELSE ag.a[1 + (g / 2) % $5] END AS agent,
                         o.a[1 + g % $5] AS buyer
                    FROM generate_series($1::int, $2::int) g
                   CROSS JOIN (SELECT array_agg(id ORDER BY n) AS a FROM scale_orgs) o
                   CROSS JOIN (SELECT array_agg(id ORDER BY n) AS a FROM scale_agents) ag
                   CROSS JOIN LATERAL (SELECT now() - random() * interval '365 days' + g * interval '0' AS t, random() + g * 0 AS r) x`;
  await c.query(
    `INSERT INTO checkout_sessions (id, organization_id, amount_units, description, status, escrow_template_id, expires_at, created_at, updated_at)
     SELECT pg_temp.uuid7_at(t), org, (1 + (g % 500)) * 1000000, 'Order ' || g,
            CASE WHEN r < 0.6 THEN 'released' WHEN r < 0.85 THEN 'expired' WHEN r < 0.9 THEN 'funded' ELSE 'open' END,
            'custom', t + interval '24 hours', t, t
       FROM (${series}) s`,
    p,
  );
  // One event and its delivery per row (relayed; deliveries mostly done, a few failed or retrying).
  await c.query(
    `WITH ev AS (
       INSERT INTO outbox_events (id, organization_id, type, data, created_at, relayed_at)
       SELECT pg_temp.uuid7_at(t), org, 'checkout.funded', jsonb_build_object('g', g), t, t FROM (${series}) s
       RETURNING id, organization_id, created_at)
     INSERT INTO webhook_deliveries (id, event_id, organization_id, event_type, url, status, attempts, next_attempt_at, delivered_at, created_at, updated_at, target)
     SELECT pg_temp.uuid7_at(created_at), id, organization_id, 'checkout.funded', 'http://127.0.0.1:9/hook', st, 1,
            CASE WHEN st = 'retrying' THEN created_at + interval '1 hour' END, CASE WHEN st = 'succeeded' THEN created_at END, created_at, created_at, 'endpoint'
       FROM (SELECT *, CASE WHEN random() < 0.95 THEN 'succeeded' WHEN random() < 0.9 THEN 'failed' ELSE 'retrying' END AS st FROM ev) e`,
    p,
  );
  await c.query(
    `INSERT INTO escrows (id, escrow_key, status, buyer_address, seller_address, buyer_organization_id, seller_organization_id, amount_units,
                          escrow_template_id, inspection_window_seconds, created_at, updated_at)
     SELECT pg_temp.uuid7_at(t), '0x' || md5('escrow' || g) || md5('key' || g), CASE WHEN r < 0.9 THEN 'released' WHEN r < 0.97 THEN 'refunded' ELSE 'cancelled' END,
            '0x' || repeat('3', 40), '0x' || repeat('4', 40),
            buyer, org, 1000000 * (1 + g % 100), 'custom', 86400, t, t
       FROM (${series}) s`,
    p,
  );
  await c.query(
    `INSERT INTO payments (id, agent_id, organization_id, idempotency_key, fingerprint, status, mode, to_handle, to_address, from_address, amount,
                           auth_nonce, auth_signature, tx_hash, created_at, updated_at)
     SELECT pg_temp.uuid7_at(t), agent, org, 'k' || g, md5('f' || g), CASE WHEN r < 0.95 THEN 'succeeded' ELSE 'failed' END, 'instant',
            'payee', '0x' || repeat('5', 40), '0x' || repeat('6', 40), 1000000, '0x' || md5('n' || g) || md5('m' || g), '0x00', '0x' || md5('tx' || g), t, t
       FROM (${series}) s`,
    p,
  );
  // The ledger (balance_transactions, DESIGN §21) as the projector writes it: one row per USDC Transfer log,
  // id a UUIDv5 of (tx_hash, log_index) (random-looking, as gen_random_uuid), block time = the movement's
  // time, recorded a few seconds later at the confirmation depth by the indexer named in `cursor`:
  // escrow releases (source the checkout session; cursor 'escrow') most, agent payments and x402
  // settlements (cursor 'usdc-authorizations'), and refunds (negative; the refund watcher's).
  if (await hasTable(c, 'balance_transactions')) {
    await c.query(
      `INSERT INTO balance_transactions (id, organization_id, type, amount, fee, currency, source_type, source_id, tx_hash, log_index,
                                         block_number, block_timestamp, cursor, created_at)
       SELECT gen_random_uuid(), org, ty, CASE WHEN ty = 'refund' THEN -1 ELSE 1 END * 1000000 * (1 + g % 100), 0, 'USDC',
              CASE ty WHEN 'escrow_release' THEN 'checkout_session' WHEN 'payment' THEN 'payment' WHEN 'x402' THEN 'x402_settlement' ELSE 'refund' END,
              gen_random_uuid(), '0x' || md5('bt' || g) || md5('tx' || g), 1 + g % 7,
              (extract(epoch FROM t) / 2)::bigint, t,
              CASE ty WHEN 'escrow_release' THEN 'escrow' WHEN 'refund' THEN 'refund-watcher' ELSE 'usdc-authorizations' END,
              t + interval '30 seconds'
         FROM (SELECT s.*, CASE WHEN r < 0.6 THEN 'escrow_release' WHEN r < 0.85 THEN 'payment' WHEN r < 0.93 THEN 'x402' ELSE 'refund' END AS ty
                 FROM (${series}) s) s`,
      p,
    );
  }
  // Idempotency records live 24 h: about 1 in 365 is still live, the rest wait for the reaper.
  // Written in time order, as the product writes them (each at its request, expiring a fixed TTL
  // later): the reaper's oldest-first batch is then rows written together, as in production. In
  // random order each batch touched rows scattered over the whole heap, a layout an append-only
  // table with a fixed TTL does not have (docs/operations.md, "idempotency reaper").
  await c.query(
    `INSERT INTO idempotency_records (id, scope_hash, idempotency_key, organization_id, method, path, fingerprint, response_status, response_body, created_at, expires_at)
     SELECT pg_temp.uuid7_at(t), md5('scope' || (g % 1000)), 'key-' || g, org, 'POST', '/api/v1/checkout-sessions', md5('f' || g), 200, '{}', t, t + interval '24 hours'
       FROM (${series}) s ORDER BY t`,
    p,
  );
}

/** Whether `table` exists in this schema (a table another change adds is seeded and measured only when present). */
async function hasTable(c, table) {
  const { rows } = await c.query(`SELECT to_regclass($1) IS NOT NULL AS present`, [`public.${table}`]);
  return rows[0].present;
}

const stats = (sorted) => ({ p50: round(percentile(sorted, 50)), p99: round(percentile(sorted, 99)), n: sorted.length });
const round = (x) => (x === null ? null : Math.round(x * 100) / 100);

async function call(base, method, path, key, body, extraHeaders = {}) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { 'x-api-key': key, ...(body ? { 'content-type': 'application/json' } : {}), ...extraHeaders },
    body: body ? JSON.stringify(body) : undefined,
  });
  const json = await res.json();
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/**
 * `n` timed calls of `fn(target, i)` per target after `warmup` untimed ones, alternating the
 * targets call by call (A B B A …), so both see the same machine. @returns ms per call, sorted, per target.
 */
async function interleaved(targets, n, warmup, fn) {
  for (let i = 0; i < warmup; i++) for (const t of targets) await fn(t, i);
  const out = targets.map(() => []);
  for (let i = 0; i < n; i++) {
    const order = i % 2 === 0 ? targets.map((_, k) => k) : targets.map((_, k) => targets.length - 1 - k);
    for (const k of order) {
      const t0 = performance.now();
      await fn(targets[k], i + warmup);
      out[k].push(performance.now() - t0);
    }
  }
  return out.map((xs) => xs.sort((a, b) => a - b));
}

/** Per-request figures of every target (the growing database and the fixed reference), measured interleaved. @returns one { figure: stats } per target. */
async function measureRequests(targets, opts) {
  const n = opts.requests;
  const w = opts.warmup;
  const out = targets.map(() => ({}));
  const figure = async (name, fn) => {
    const t0 = Date.now();
    const times = await interleaved(targets, n, w, fn);
    times.forEach((t, k) => (out[k][name] = { ...stats(t), seconds: Math.round((Date.now() - t0) / 100) / 10 }));
    printFigure(name, out[0][name], out[1]?.[name]);
  };
  for (const t of targets) {
    const { rows } = await t.c.query(`SELECT id FROM checkout_sessions WHERE organization_id = $1 ORDER BY random() LIMIT 500`, [t.seed.big]);
    t.ids = rows.map((r) => r.id);
    t.deepCursor = await deepCursor(t, '/api/v1/checkout-sessions?limit=10');
  }
  await figure('checkout list', (t) => call(t.base, 'GET', '/api/v1/checkout-sessions?limit=10', t.seed.merchantKey));
  await figure('checkout list, 20 pages deep', (t) => call(t.base, 'GET', `/api/v1/checkout-sessions?limit=10&starting_after=${t.deepCursor}`, t.seed.merchantKey));
  await figure('checkout get', (t, i) => call(t.base, 'GET', `/api/v1/checkout-sessions/${t.ids[i % t.ids.length]}`, t.seed.merchantKey));
  await figure('checkout create', (t) =>
    call(t.base, 'POST', '/api/v1/checkout-sessions', t.seed.merchantKey, { amount: '25.00', description: 'Scale order' }, { 'idempotency-key': `scale-${randomUUID()}` }),
  );
  await figure('webhook deliveries list', (t) => call(t.base, 'GET', '/api/v1/webhook-deliveries?limit=10', t.seed.merchantKey));
  await figure('escrows list', (t) => call(t.base, 'GET', '/api/v1/escrows?limit=10', t.seed.merchantKey));
  await figure('agent payments list', (t) => call(t.base, 'GET', '/api/v1/payments?limit=10', t.seed.agentKey));
  if (await hasTable(targets[0].c, 'balance_transactions')) {
    for (const t of targets) t.ledgerDeep = await deepCursor(t, '/api/v1/balance-transactions?limit=10');
    await figure('balance transactions list', (t) => call(t.base, 'GET', '/api/v1/balance-transactions?limit=10', t.seed.merchantKey));
    await figure('balance transactions list, 20 pages deep', (t) => call(t.base, 'GET', `/api/v1/balance-transactions?limit=10&starting_after=${t.ledgerDeep}`, t.seed.merchantKey));
    await figure('balance transactions list, type=refund', (t) => call(t.base, 'GET', '/api/v1/balance-transactions?limit=10&type=refund', t.seed.merchantKey));
  } else {
    console.log('    balance transactions list skipped: no balance_transactions table in this schema');
  }
  return out;
}

/** The cursor 20 pages deep into the big organisation's list at `path` (a `?limit=` query), walked page by page. */
async function deepCursor(t, path) {
  let cursor = null;
  for (let page = 0; page < 20; page++) {
    const r = await call(t.base, 'GET', `${path}${cursor ? `&starting_after=${cursor}` : ''}`, t.seed.merchantKey);
    if (!r.nextCursor) throw new Error(`${path}: page ${page + 1} is the last, the seeded list should be deeper`);
    cursor = r.nextCursor;
  }
  return cursor;
}

/** The compiled repositories on a DataSource of their own, with a transaction host shaped as the app's (`tx`, `withTransaction`). */
async function compiledRepositories(dist, url) {
  const require = createRequire(join(root, dist, 'src', 'main.js'));
  const { DataSource } = require('typeorm');
  const { dataSourceOptions, ENTITY_FILES } = require('./database/data-source.js');
  const ds = new DataSource({ ...dataSourceOptions(url, [ENTITY_FILES]), extra: { max: 4 } });
  await ds.initialize();
  let current = null;
  const txHost = {
    get tx() {
      return current ?? ds.manager;
    },
    async withTransaction(...args) {
      const fn = args[args.length - 1];
      if (current) return fn();
      return ds.transaction(async (m) => {
        current = m;
        try {
          return await fn();
        } finally {
          current = null;
        }
      });
    },
  };
  const webhooks = webhookPasses(require, txHost, ds);
  const { deliveriesFor } = require('./modules/webhooks/delivery/outbox-relay.service.js');
  const { RELAY_BATCH } = require('./modules/webhooks/delivery/outbox-relay.processor.js');
  const { RETENTION_DAYS } = require('./modules/webhooks/delivery/webhook-retention.service.js');
  const { IdempotencyRepository } = require('./kernel/idempotency/idempotency.repository.js');
  const { ReconciliationRepository } = require('./chain/reconciliation/reconciliation.repository.js');
  const { PaymentsRepository } = require('./modules/payments/payments.repository.js');
  const idem = new IdempotencyRepository(txHost);
  return {
    ds,
    txHost,
    webhooks,
    deliveriesFor,
    RELAY_BATCH,
    RETENTION_DAYS,
    idempotency: idem,
    reaperBatch: typeof idem.deleteExpiredBatch === 'function' ? (limit) => idem.deleteExpiredBatch(limit) : () => idem.deleteExpired(),
    reaperBatched: typeof idem.deleteExpiredBatch === 'function',
    reconciliation: new ReconciliationRepository(ds),
    payments: new PaymentsRepository(txHost),
  };
}

/**
 * The relay's claim and fan-out and one retention batch of a compiled tree: since issue 31 the
 * outbox (src/common/outbox), the endpoints and the deliveries each have their own repository; an
 * older tree still has the one WebhooksRepository.
 */
function webhookPasses(require, txHost, ds) {
  let split;
  try {
    split = {
      ...require('./common/outbox/outbox.repository.js'),
      ...require('./modules/webhooks/webhook-endpoints.repository.js'),
      ...require('./modules/webhooks/webhook-deliveries.repository.js'),
      ...require('./modules/webhooks/event-fan-out.service.js'),
    };
  } catch {
    const { WebhooksRepository } = require('./modules/webhooks/webhooks.repository.js');
    return new WebhooksRepository(txHost, { env: {} }, ds);
  }
  const outbox = new split.OutboxRepository(txHost, { env: {} });
  const deliveries = new split.WebhookDeliveriesRepository(txHost, ds);
  const fanOut = new split.EventFanOut(outbox, new split.WebhookEndpointsRepository(txHost), deliveries);
  return {
    claimPendingEvents: (limit) => fanOut.claimPendingEvents(limit),
    insertDeliveriesAndMarkRelayed: (rows, ids) => fanOut.insertDeliveriesAndMarkRelayed(rows, ids),
    // As WebhookRetentionService's batch, in the caller's transaction.
    async deleteExpiredEvents(_query, days, limit) {
      const ids = (await outbox.lockExpired(days, limit, null)).map((e) => e.id);
      const busy = await deliveries.eventsInFlight(ids);
      const doomed = ids.filter((id) => !busy.has(id));
      const removed = await deliveries.deleteForEvents(doomed);
      return { events: await outbox.deleteEvents(doomed), deliveries: removed };
    },
  };
}

/** Runs `fn` in a transaction of the compiled repositories' host and rolls it back (the pass's effect is not kept). */
async function rolledBack(repos, fn) {
  const rollback = new Error('rollback');
  let result;
  await repos.txHost
    .withTransaction(async () => {
      result = await fn((sql, params) => repos.txHost.tx.query(sql, params));
      throw rollback;
    })
    .catch((err) => {
      if (err !== rollback) throw err;
    });
  return result;
}

/**
 * The passes, each as { name, batches, setup(t), batch(t, i) → ms or void, teardown(t) }: set up
 * on every target, then batches alternating target by target, then torn down; a pass's backlog
 * exists only while it is measured.
 */
function passFigures(opts) {
  return [
    {
      // Outbox relay: 100k pending events, RELAY_BATCH per batch, as the relay's loop runs them.
      name: 'outbox relay (1,000 events)',
      batches: opts.relayBatches,
      async setup({ c, seed }) {
        await c.query(
          `INSERT INTO outbox_events (id, organization_id, type, data, created_at)
           SELECT pg_temp.uuid7_at(now() - g * interval '1 millisecond'), $1, 'checkout.funded', '{"backlog":true}', now() - g * interval '1 millisecond'
             FROM generate_series(1, $2) g`,
          [seed.big, opts.backlogs.outbox],
        );
        await c.query('ANALYZE outbox_events');
      },
      async batch({ repos }, i) {
        const n = await repos.txHost.withTransaction(async () => {
          const events = await repos.webhooks.claimPendingEvents(repos.RELAY_BATCH);
          const rows = events.flatMap((e) => repos.deliveriesFor(e));
          await repos.webhooks.insertDeliveriesAndMarkRelayed(rows, events.map((e) => e.id));
          return events.length;
        });
        if (n !== repos.RELAY_BATCH) throw new Error(`relay batch ${i} claimed ${n} events, expected ${repos.RELAY_BATCH}`);
      },
      teardown: ({ c }) => c.query(`DELETE FROM outbox_events WHERE data @> '{"backlog":true}'`),
    },
    {
      // Retention: the seeded events older than 30 days are the backlog; each batch rolled back.
      name: 'webhook retention (5,000 events)',
      // Rolled back, so any number can be timed: 15, for a p50 that is not one of three samples.
      batches: 15,
      batch: async (t) => {
        const r = await rolledBack(t.repos, (q) => t.repos.webhooks.deleteExpiredEvents(q, t.repos.RETENTION_DAYS, 5000));
        if (!(r.events > 0)) throw new Error('retention deleted no event: the seeded history should be its backlog');
      },
    },
    {
      name: 'idempotency reaper (5,000 records)',
      batches: 15,
      batch: async (t) => {
        const n = await rolledBack(t.repos, () => t.repos.reaperBatch(5000));
        if (!(n > 0)) throw new Error('the reaper deleted no record: the seeded history should be its backlog');
      },
    },
    {
      // Reconciliation: 10k open escrows and 100k payments ended in the last 7 days; one pass's ledger
      // reads, a batch of RECONCILE_BATCH escrows and of payments from their cursors (each batch goes on after the last).
      name: `reconciliation ledger reads (one pass: ${RECONCILE_BATCH} held escrows, ${RECONCILE_BATCH} changed escrows, ${RECONCILE_BATCH} payments)`,
      // 15 batches, each full: the cursors start over after as many as the open-escrow backlog fills
      // (3 with --ci's 2,000), as a pass does after its last batch; a p50 of 3 samples was CI's noise.
      batches: 15,
      async setup(t) {
        const { c, seed } = t;
        t.recon = { escrowAfter: '', recentAfter: null, paymentAfter: null };
        await c.query(
          `INSERT INTO escrows (id, escrow_key, status, buyer_address, seller_address, seller_organization_id, amount_units, escrow_template_id, inspection_window_seconds, created_at, updated_at)
           SELECT pg_temp.uuid7_at(now() - g * interval '1 second'), '0xbacklog' || md5('open' || g), 'funded', '0x' || repeat('3', 40), '0x' || repeat('4', 40), $1, 1000000, 'backlog', 86400,
                  now() - g * interval '1 second', now() - g * interval '1 second'
             FROM generate_series(1, $2) g`,
          [seed.big, opts.backlogs.openEscrows],
        );
        await c.query(
          `INSERT INTO payments (id, agent_id, organization_id, idempotency_key, fingerprint, status, mode, to_handle, to_address, from_address, amount, auth_nonce, auth_signature, created_at, updated_at)
           SELECT pg_temp.uuid7_at(now() - g * interval '5 seconds'), $1, $2, 'backlog-' || g, 'f', 'succeeded', 'instant', 'payee', '0x' || repeat('5', 40), '0x' || repeat('7', 40), 1000000,
                  '0x' || md5('recent' || g) || md5('n' || g), '0x00', now() - g * interval '5 seconds', now() - g * interval '5 seconds'
             FROM generate_series(1, $3) g`,
          [seed.bigAgent, seed.big, opts.backlogs.recentPayments],
        );
        await c.query('ANALYZE escrows, payments');
      },
      async batch(t, i) {
        if (i % (Math.floor(opts.backlogs.openEscrows / RECONCILE_BATCH) - 1) === 0) t.recon = { escrowAfter: '', recentAfter: null, paymentAfter: null };
        const recon = t.recon;
        const [escrows, recent, payments] = await Promise.all([
          t.repos.reconciliation.heldEscrows(recon.escrowAfter, RECONCILE_BATCH),
          t.repos.reconciliation.recentEscrows(7, recon.recentAfter, RECONCILE_BATCH),
          t.repos.reconciliation.terminalPayments(7, recon.paymentAfter, RECONCILE_BATCH),
          t.repos.reconciliation.heldSum(),
        ]);
        if (escrows.length !== RECONCILE_BATCH || recent.length !== RECONCILE_BATCH || payments.length !== RECONCILE_BATCH) {
          throw new Error(`a reconciliation batch read ${escrows.length} held and ${recent.length} changed escrows and ${payments.length} payments, expected ${RECONCILE_BATCH} of each`);
        }
        recon.escrowAfter = escrows.at(-1).id;
        recon.recentAfter = recent.at(-1).cursor;
        recon.paymentAfter = payments.at(-1).cursor;
      },
      // The escrows stay for the indexer's figure below, which removes them.
      teardown: ({ c, seed }) => c.query(`DELETE FROM payments WHERE idempotency_key LIKE 'backlog-%' AND agent_id = $1`, [seed.bigAgent]),
    },
    {
      // Indexer catch-up (approximated): `delivered` applied to the funded backlog escrows, 100 events per batch.
      name: 'indexer apply (100 events, approximated)',
      batches: Math.ceil(opts.indexerEvents / 100),
      async setup(t) {
        const { rows } = await t.c.query(`SELECT id, escrow_key FROM escrows WHERE escrow_template_id = 'backlog' ORDER BY escrow_key LIMIT $1`, [opts.indexerEvents]);
        t.indexerKeys = rows;
        t.block = 1_000_000 + Math.floor(Math.random() * 1e6);
      },
      async batch(t, i) {
        const { repos } = t;
        for (const [j, k] of t.indexerKeys.slice(i * 100, i * 100 + 100).entries()) {
          const tx = `0x${randomUUID().replace(/-/g, '')}${randomUUID().replace(/-/g, '')}`;
          await repos.txHost.withTransaction(async () => {
            const q = (sql, params) => repos.txHost.tx.query(sql, params);
            await q(`SELECT * FROM escrows WHERE escrow_key = $1 FOR UPDATE`, [k.escrow_key]);
            await q(`SELECT 1 FROM escrow_chain_events WHERE tx_hash = $1 AND log_index = $2`, [tx, j]);
            await q(`SELECT * FROM escrow_chain_events WHERE escrow_id = $1 ORDER BY block_number, log_index`, [k.id]);
            await q(
              `INSERT INTO escrow_chain_events (id, escrow_id, action, tx_hash, log_index, block_number, block_hash) VALUES (gen_random_uuid(), $1, 'delivered', $2, $3, $4, $2)`,
              [k.id, tx, j, t.block + i],
            );
            await q(`UPDATE escrows SET status = 'delivered', delivered_at = now(), updated_at = now() WHERE id = $1`, [k.id]);
          });
        }
      },
      teardown: ({ c }) => c.query(`DELETE FROM escrows WHERE escrow_template_id = 'backlog'`),
    },
    {
      // Payment sweep: 10k idle pending payments; one selection of the sweep.
      name: 'payment sweep selection (100 payments)',
      batches: 10,
      async setup({ c, seed }) {
        await c.query(
          `INSERT INTO payments (id, agent_id, organization_id, idempotency_key, fingerprint, status, mode, to_handle, to_address, from_address, amount, created_at, updated_at)
           SELECT pg_temp.uuid7_at(now() - interval '1 hour'), $1, $2, 'idle-' || g, 'f', 'pending', 'instant', 'payee', '0x' || repeat('5', 40), '0x' || repeat('6', 40), 1000000,
                  now() - interval '1 hour' - g * interval '1 second', now() - interval '1 hour' - g * interval '1 second'
             FROM generate_series(1, $3) g`,
          [seed.bigAgent, seed.big, opts.backlogs.idlePayments],
        );
        await c.query('ANALYZE payments');
      },
      async batch({ repos }) {
        const rows = await repos.payments.idle(new Date(Date.now() - 30_000));
        if (rows.length !== 100) throw new Error(`payment sweep selected ${rows.length} idle payments, expected 100`);
      },
      teardown: ({ c, seed }) => c.query(`DELETE FROM payments WHERE idempotency_key LIKE 'idle-%' AND agent_id = $1`, [seed.bigAgent]),
    },
  ];
}

/** Per-pass figures of every target, batches interleaved target by target. @returns one { figure: stats } per target. */
async function measurePasses(targets, opts) {
  const out = targets.map(() => ({}));
  for (const pass of passFigures(opts)) {
    const t0 = Date.now();
    for (const t of targets) await pass.setup?.(t);
    const times = await interleaved(targets, pass.batches, 0, (t, i) => pass.batch(t, i));
    times.forEach((x, k) => (out[k][pass.name] = { ...stats(x), seconds: null }));
    if (pass.name.startsWith('outbox relay')) times.forEach((x, k) => (out[k][pass.name].rate = Math.round((1000 * 1000) / percentile(x, 50))));
    for (const t of targets) await pass.teardown?.(t);
    out.forEach((o) => (o[pass.name].seconds = Math.round((Date.now() - t0) / 100) / 10));
    printFigure(pass.name, out[0][pass.name], out[1]?.[pass.name]);
  }
  return out;
}

/** Prints one figure as soon as it is measured (a run that stalls later keeps what it measured), with its wall time including set-up and teardown. */
function printFigure(name, v, ref) {
  console.log(`    ${name.padEnd(42)} p50 ${v.p50} ms  p99 ${v.p99} ms${v.rate ? `  (${v.rate} events/s)` : ''}   reference p50 ${ref?.p50} ms   [${v.seconds} s]`);
}

const fmtSize = (n) => (n >= 1e6 ? `${n / 1e6}M` : n >= 1e3 ? `${n / 1e3}k` : String(n));

/**
 * Rows: figure, p50 (p99) of the growing database per size, the reference's p50 measured beside
 * the largest size, and the aim's ratio: p50 at the largest size over the reference's p50 measured
 * in the same window (interleaved call by call). The ratio at the first size (both databases the
 * same size) shows the noise of the measurement.
 */
function report(sizes, perSize, refPerSize, aim) {
  const names = Object.keys(perSize.at(-1)).filter((k) => perSize.at(-1)[k]?.p50 !== undefined);
  const rows = [];
  const failures = [];
  const last = fmtSize(sizes.at(-1));
  for (const name of names) {
    const cells = perSize.map((s) => (!s ? 'not measured' : s[name] ? `${s[name].p50} (${s[name].p99})` : '—'));
    const ref = refPerSize.at(-1)[name]?.p50;
    const ratio = ref && perSize.at(-1)[name]?.p50 ? perSize.at(-1)[name].p50 / ref : null;
    const ref0 = refPerSize[0]?.[name]?.p50;
    const noise = ref0 && perSize[0]?.[name]?.p50 ? perSize[0][name].p50 / ref0 : null;
    const ok = ratio !== null && ratio <= aim;
    if (ratio !== null && !ok) failures.push(`${name}: ${ratio.toFixed(2)}x`);
    rows.push([name, ...cells, ref ?? '—', noise === null ? '—' : `${noise.toFixed(2)}x`, ratio === null ? '—' : `${ratio.toFixed(2)}x`, ratio === null ? '—' : ok ? 'met' : 'NOT met']);
  }
  const header = [
    'figure (ms: p50 (p99))', ...sizes.map(fmtSize), `${fmtSize(sizes[0])} reference p50 beside ${last}`,
    `${fmtSize(sizes[0])}/reference (noise)`, `${last}/reference p50`, `aim <= ${aim}x`,
  ];
  const md = [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
  return { md, failures };
}

export async function main(args) {
  const opts = parseArgs(args);
  const stamp = fileStamp();
  const redisPrefix = `pcp_scale_${Date.now().toString(36)}`;
  const releaseChildren = guardChildren();
  const started = Date.now();
  const perSize = [];
  const refPerSize = [];
  const seedTimes = [];
  const stops = [];
  // The growing database, and a reference kept at the first size: every figure is measured on both,
  // interleaved, so the ratio compares sizes under the same machine load (the machine may be shared).
  const targets = [
    { name: DB_NAME, url: DATABASE_URL },
    { name: `${DB_NAME}_ref`, url: databaseUrl(`${DB_NAME}_ref`) },
  ];
  try {
    console.log(`scale bench: sizes ${opts.sizes.map(fmtSize).join(' → ')} beside a ${fmtSize(opts.sizes[0])} reference, ${opts.requests} requests per figure, node ${process.version}, ${cpus().length} cpus, load ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
    for (const [k, t] of targets.entries()) {
      const env = { DATABASE_URL: t.url, REDIS_URL, REDIS_PREFIX: `${redisPrefix}_${k}`, LOG_LEVEL: 'silent' };
      await freshDatabase(t.name, opts.dist, env);
      t.c = new pg.Client({ connectionString: t.url });
      await t.c.connect();
      await t.c.query(UUID7_FN);
      t.seed = await seedParties(t.c, opts.dist);
      t.repos = await compiledRepositories(opts.dist, t.url);
      const port = await freePort();
      t.base = `http://${HOST}:${port}`;
      const apiEnv = { ...env, NODE_ENV: 'production', PORT: String(port), API_BASE_URL: t.base, CHECKOUT_BASE_URL: t.base, RATE_LIMIT_PER_MINUTE: '1000000000', RATE_LIMIT_PUBLIC_PER_MINUTE: '1000000000' };
      const api = await startProcess(`api ${k}`, [`${opts.dist}/src/main.js`], apiEnv, `${t.base}/health/live`);
      stops.push(() => api.stop());
      t.have = 0;
    }
    const ledger = (await hasTable(targets[0].c, 'balance_transactions')) ? ', balance_transactions' : '';
    const settle = (t) => t.c.query(`VACUUM ANALYZE checkout_sessions, outbox_events, webhook_deliveries, escrows, payments, idempotency_records${ledger}`);
    const growTo = async (t, size) => {
      // In steps of at most 250k rows per statement, so one statement's memory stays bounded.
      for (let from = t.have; from < size; from += 250_000) await grow(t.c, t.seed, from, Math.min(size, from + 250_000));
      t.have = size;
      await settle(t);
    };
    await growTo(targets[1], opts.sizes[0]);
    for (const size of opts.sizes) {
      const t0 = Date.now();
      await growTo(targets[0], size);
      seedTimes.push(Date.now() - t0);
      if (opts.lastOnly && size !== opts.sizes.at(-1)) {
        // --ci: the guard compares the last size with the reference; the first size's own figures
        // (the noise column) are left out to keep CI short.
        console.log(`  ${fmtSize(size)} rows per table, seeded in ${((Date.now() - t0) / 1000).toFixed(1)} s; not measured (--ci measures the last size only)`);
        perSize.push(null);
        refPerSize.push(null);
        continue;
      }
      console.log(`  ${fmtSize(size)} rows per table (half of them the big organisation's), seeded in ${((Date.now() - t0) / 1000).toFixed(1)} s; measuring beside the ${fmtSize(opts.sizes[0])} reference`);
      const [requests, refRequests] = await measureRequests(targets, opts);
      const [passes, refPasses] = await measurePasses(targets, opts);
      const figures = { ...requests, ...passes };
      const refFigures = { ...refRequests, ...refPasses };
      perSize.push(figures);
      refPerSize.push(refFigures);
    }
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => {});
    for (const t of targets) {
      await t.repos?.ds.destroy().catch(() => {});
      await t.c?.end().catch(() => {});
      if (!opts.keep) await dropDatabase(t.name).catch(() => {});
    }
    releaseChildren();
    for (const k of [0, 1]) await deleteRedisKeys(`${redisPrefix}_${k}`).catch(() => {});
  }
  const { md, failures } = report(opts.sizes, perSize, refPerSize, opts.aim);
  console.log('');
  console.log(md);
  console.log(`\n${((Date.now() - started) / 1000).toFixed(0)} s in all; load average at the end ${loadavg().map((l) => l.toFixed(2)).join(' ')} (${cpus().length} cpus)`);
  const file = writeResult(
    `scale-${stamp}.json`,
    JSON.stringify({ benchmark: 'scale', startedAt: stamp, options: opts, sizes: opts.sizes, seedMs: seedTimes, perSize, referencePerSize: refPerSize, table: md, failures, loadAverage: loadavg() }, null, 2) + '\n',
  );
  console.log(`results: ${file}`);
  if (failures.length) throw new Error(`aim (p50 at ${fmtSize(opts.sizes.at(-1))} <= ${opts.aim}x the ${fmtSize(opts.sizes[0])} reference's) not met: ${failures.join('; ')}`);
}

if (isMain(import.meta.url)) runMain(main);
