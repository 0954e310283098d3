// Baselines for bench/checkout.mjs (issue 33, DESIGN §23: "equal or leaner, never heavier"): the
// same two checkout-session operations as the api, as a bare node:http + pg + ioredis server on the
// same schema, with the same guarantees, so the ratio measures our framework and code, not skipped
// or extra work. BASELINE_MODE picks one of two:
//
// equal (default): what the api does, the way it does it
//   every request   the credential from a process cache (CREDENTIAL_CACHE_TTL_MS, default 5 s; a
//                   miss is one SELECT on api_keys), then ONE Redis call (EVALSHA) that checks the
//                   address's failed-auth allowance and the key's revocation marker and counts the
//                   request in its rate-limit window (the api's CHECK_KNOWN_AND_COUNT script, same
//                   keys); the same RateLimit headers
//   POST /api/v1/checkout-sessions   validation, then the api's three PostgreSQL round trips:
//                   [BEGIN; the key's advisory lock; the record lookup; SAVEPOINT] as one simple-
//                   protocol batch, INSERT checkout_sessions (unless the organisation's KYB was
//                   rejected), [INSERT idempotency_records; COMMIT] as one simple-protocol batch
//   GET  /api/v1/checkout-sessions/:id   one SELECT by id and organization_id
// lean: the fewest round trips a correct server needs, the same Redis call
//   POST            ONE autocommit statement: a CTE claims the idempotency record with
//                   INSERT … ON CONFLICT (an expired one is taken over) holding the final response,
//                   and inserts the session only when the claim won; when it lost, a second
//                   statement reads the record (replay, 422 on another body)
//   GET             as equal
// Both answer with the api's body (the same DTO) and status.
// Env: PORT (required), BASELINE_MODE, DATABASE_URL, REDIS_URL, REDIS_PREFIX, CHECKOUT_BASE_URL,
// PG_POOL_MAX (default 20, the api's pool size), CREDENTIAL_CACHE_TTL_MS, AUTH_FAILURES_PER_MINUTE,
// RATE_LIMIT_PER_MINUTE.
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import Redis from 'ioredis';
import pg from 'pg';
import { v7 as uuidv7 } from 'uuid';

const PORT = Number(process.env.PORT);
const MODE = process.env.BASELINE_MODE ?? 'equal';
if (!['equal', 'lean'].includes(MODE)) throw new Error(`BASELINE_MODE must be equal or lean, not ${MODE}`);
const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/pcp_bench';
const PAY_BASE = (process.env.CHECKOUT_BASE_URL ?? 'http://localhost:3000').replace(/\/$/, '');
const TTL_MS = 24 * 3600_000;
const IDEMPOTENCY_TTL_MS = 24 * 3600_000;
const CACHE_TTL_MS = Number(process.env.CREDENTIAL_CACHE_TTL_MS ?? 5000);
const AUTH_FAILURES = Number(process.env.AUTH_FAILURES_PER_MINUTE ?? 60);
const RATE_LIMIT = Number(process.env.RATE_LIMIT_PER_MINUTE ?? 1000);
const WINDOW_MS = 60_000;
const AMOUNT = /^(0|[1-9]\d*)(\.\d{1,6})?$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ITEM = /^\/api\/v1\/checkout-sessions\/([^/?]+)$/;
const COLLECTION = '/api/v1/checkout-sessions';

const pool = new pg.Pool({ connectionString: DATABASE_URL, max: Number(process.env.PG_POOL_MAX ?? 20) });
const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const REDIS_PREFIX = process.env.REDIS_PREFIX ?? 'pcp';
// The api's one-command check of a cached credential (src/kernel/rate-limit/auth-failure.limiter.ts
// CHECK_KNOWN_AND_COUNT with redis-throttler.storage.ts countLines), run the same way (EVALSHA).
// KEYS: failures, pending, revocation marker, rate-limit counter. ARGV: limit, window ms.
redis.defineCommand('checkKnownAndCount', {
  numberOfKeys: 4,
  lua: `
local failures = tonumber(redis.call('GET', KEYS[1]) or '0')
local pending = tonumber(redis.call('GET', KEYS[2]) or '0')
local limit = tonumber(ARGV[1])
local spent, retry = failures + pending >= limit, 0
if spent then
  retry = 1000
  if failures >= limit then retry = redis.call('PTTL', KEYS[1]) end
  if retry < 0 then retry = 1000 end
end
local verdict = 1
if spent then verdict = 0 elseif redis.call('EXISTS', KEYS[3]) == 1 then verdict = 2 end
local hits = redis.call('INCR', KEYS[4])
if hits == 1 then redis.call('PEXPIRE', KEYS[4], ARGV[2]) end
local ttl = redis.call('PTTL', KEYS[4])
if ttl < 0 then redis.call('PEXPIRE', KEYS[4], ARGV[2]); ttl = tonumber(ARGV[2]) end
return {verdict, retry, hits, ttl}`,
});

/** digest (hex) → { key, until }: the api's credential cache (src/kernel/auth/credential-cache.ts). */
const cache = new Map();

/**
 * The request's key: from the cache (then one Redis call: allowance, revocation, rate-limit count)
 * or looked up in PostgreSQL (then cached). Answers 401/429 itself and returns null then.
 * @returns {Promise<{id: string, organizationId: string, scopes: string[]} | null>}
 */
async function authenticate(req, res) {
  const secret = req.headers['x-api-key'];
  if (typeof secret !== 'string' || secret.length === 0 || secret.length > 200) {
    send(res, 401, { error: 'unauthorized', code: 'unauthorized' });
    return null;
  }
  const digest = createHash('sha256').update(secret, 'utf8').digest();
  const hex = digest.toString('hex');
  let entry = cache.get(hex);
  if (entry && entry.until <= Date.now()) {
    cache.delete(hex);
    entry = undefined;
  }
  if (!entry) {
    const { rows } = await pool.query('SELECT id, organization_id, scopes FROM api_keys WHERE secret_hash = $1 AND revoked_at IS NULL', [digest]);
    if (!rows.length) {
      send(res, 401, { error: 'unauthorized', code: 'unauthorized' });
      return null;
    }
    entry = { key: { id: rows[0].id, organizationId: rows[0].organization_id, scopes: rows[0].scopes }, until: Date.now() + CACHE_TTL_MS };
    if (CACHE_TTL_MS > 0) cache.set(hex, entry);
  }
  const key = entry.key;
  const address = req.socket.remoteAddress ?? 'unknown';
  const base = `${REDIS_PREFIX}:authfail:{${address}}`;
  const [verdict, , hits, ttl] = await redis.checkKnownAndCount(`${base}:f`, `${base}:p`, `${REDIS_PREFIX}:credrevoked:key:${key.id}`, `${REDIS_PREFIX}:rl:default:cred:${key.id}`, AUTH_FAILURES, WINDOW_MS);
  if (verdict === 0) {
    send(res, 429, { error: 'rate limited', code: 'rate_limited' });
    return null;
  }
  if (verdict === 2) {
    cache.delete(hex);
    send(res, 401, { error: 'unauthorized', code: 'unauthorized' });
    return null;
  }
  res.setHeader('RateLimit-Policy', `"default";q=${RATE_LIMIT};w=60`);
  res.setHeader('RateLimit', `"default";r=${Math.max(0, RATE_LIMIT - hits)};t=${Math.ceil(ttl / 1000)}`);
  if (hits > RATE_LIMIT) {
    send(res, 429, { error: 'rate limited', code: 'rate_limited' });
    return null;
  }
  return key;
}

function send(res, status, body) {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function formatAmount(units) {
  const u = BigInt(units);
  let fraction = (u % 1_000_000n).toString().padStart(6, '0').replace(/0+$/, '');
  if (fraction.length < 2) fraction = fraction.padEnd(2, '0');
  return `${u / 1_000_000n}.${fraction}`;
}

function toDto(row) {
  const amount = formatAmount(row.amount_units);
  return {
    id: row.id,
    amount,
    description: row.description,
    status: row.status === 'open' && row.expires_at.getTime() <= Date.now() ? 'expired' : row.status,
    settlement: 'escrow',
    orderId: row.order_id,
    shopDomain: row.shop_domain,
    escrowId: row.escrow_id,
    escrowTemplateId: row.escrow_template_id,
    payUrl: `${PAY_BASE}/checkout/${row.id}`,
    redirectUrl: row.redirect_url,
    metadata: row.metadata,
    fee: { source: 'checkout', grossAmount: amount, feeAmount: '0.00', netAmount: amount, bps: 0, currency: 'USDC' },
    expiresAt: row.expires_at.toISOString(),
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    req.on('data', (c) => {
      size += c.length;
      if (size > 100 * 1024) reject(Object.assign(new Error('too large'), { status: 413 }));
      else chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

const INSERT_SESSION = `INSERT INTO checkout_sessions (id, organization_id, amount_units, description, status, order_id, shop_domain,
     redirect_url, webhook_url, escrow_template_id, metadata, escrow_id, expires_at, created_at, updated_at)
   SELECT $1, $2, $3, $4, 'open', $5, NULL, NULL, NULL, $6, $7, NULL, $8, $9, $9
    WHERE NOT EXISTS (SELECT 1 FROM organization_verifications WHERE organization_id = $2 AND identity_status = 'rejected')
   RETURNING *`;

/** The validated create request, or a 400 sent (null). */
async function parseCreate(req, res) {
  let body;
  try {
    body = JSON.parse(await readBody(req));
  } catch {
    send(res, 400, { error: 'malformed JSON', code: 'invalid_request' });
    return null;
  }
  if (typeof body?.amount !== 'string' || !AMOUNT.test(body.amount) || !/[1-9]/.test(body.amount)) {
    send(res, 400, { error: 'amount is invalid', code: 'invalid_request' });
    return null;
  }
  if (typeof body.description !== 'string' || body.description.length < 1 || body.description.length > 1000) {
    send(res, 400, { error: 'description is invalid', code: 'invalid_request' });
    return null;
  }
  return body;
}

async function create(req, res, key) {
  if (!key.scopes.includes('checkout:write')) return send(res, 403, { error: 'missing scope', code: 'missing_scope' });
  const idemKey = req.headers['idempotency-key'];
  const body = await parseCreate(req, res);
  if (!body) return;
  const [whole, fraction = ''] = body.amount.split('.');
  const units = (BigInt(whole) * 1_000_000n + BigInt(fraction.padEnd(6, '0'))).toString();
  const id = uuidv7();
  const now = new Date();
  const sessionParams = [id, key.organizationId, units, body.description, body.orderId ?? null, body.escrowTemplateId ?? 'custom', body.metadata ?? null, new Date(now.getTime() + TTL_MS), now];
  const scopeHash = typeof idemKey === 'string' ? createHash('sha256').update(`${key.organizationId}|merchant|POST|${COLLECTION}`).digest('hex') : null;
  const fingerprint = scopeHash ? createHash('sha256').update(JSON.stringify(body)).digest('hex') : null;
  if (MODE === 'lean') return createLean(res, key, idemKey, scopeHash, fingerprint, sessionParams);
  const client = await pool.connect();
  try {
    if (scopeHash) {
      // One round trip, as the api's beginAndClaim (simple protocol, values as literals).
      const [, lock, found] = await client.query(
        `BEGIN; SELECT pg_try_advisory_xact_lock(hashtextextended(${client.escapeLiteral(`${scopeHash}:${idemKey}`)}, 0)) AS locked;
         SELECT fingerprint, response_status, response_body FROM idempotency_records
          WHERE scope_hash = ${client.escapeLiteral(scopeHash)} AND idempotency_key = ${client.escapeLiteral(idemKey)} AND expires_at > now();
         SAVEPOINT work`,
      );
      if (!lock.rows[0].locked) {
        await client.query('ROLLBACK');
        return send(res, 409, { error: 'in flight', code: 'idempotency_conflict' });
      }
      if (found.rows.length) {
        await client.query('ROLLBACK');
        return replay(res, found.rows[0], fingerprint);
      }
    } else {
      await client.query('BEGIN');
    }
    const { rows } = await client.query(INSERT_SESSION, sessionParams);
    if (!rows.length) {
      await client.query('ROLLBACK');
      return send(res, 403, { error: 'verification rejected', code: 'kyb_rejected' });
    }
    const dto = toDto(rows[0]);
    if (scopeHash) {
      // The record and COMMIT in one simple-protocol message, as the api's `end` step (values as literals).
      const lit = (v) => client.escapeLiteral(v);
      await client.query(
        `INSERT INTO idempotency_records (id, scope_hash, idempotency_key, organization_id, method, path, fingerprint,
           response_status, response_body, expires_at)
         VALUES (${lit(uuidv7())}, ${lit(scopeHash)}, ${lit(idemKey)}, ${lit(key.organizationId)}, 'POST', ${lit(COLLECTION)}, ${lit(fingerprint)}, 200,
           ${lit(JSON.stringify(dto))}, ${lit(new Date(now.getTime() + IDEMPOTENCY_TTL_MS).toISOString())});
         COMMIT`,
      );
    } else {
      await client.query('COMMIT');
    }
    send(res, 200, dto);
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}

/** A stored outcome again (`Idempotent-Replayed: true`), or 422 when the body differs (DESIGN §5). */
function replay(res, record, fingerprint) {
  if (record.fingerprint !== fingerprint) return send(res, 422, { error: 'idempotency key reused with another body', code: 'idempotency_conflict' });
  res.setHeader('Idempotent-Replayed', 'true');
  return send(res, record.response_status, JSON.parse(record.response_body));
}

/**
 * Lean create: the response is known before the statement (id, times and amounts are the
 * request's), so one autocommit statement claims the record holding it and inserts the session
 * only when the claim won; both commit together or not at all. A lost claim (a live record) is
 * read by a second statement and replayed.
 */
async function createLean(res, key, idemKey, scopeHash, fingerprint, sessionParams) {
  const [id, organizationId, units, description, orderId, template, metadata, expiresAt, now] = sessionParams;
  const dto = toDto({
    id, organization_id: organizationId, amount_units: units, description, status: 'open', order_id: orderId, shop_domain: null, escrow_id: null,
    escrow_template_id: template, redirect_url: null, metadata, expires_at: expiresAt, created_at: now, updated_at: now,
  });
  if (!scopeHash) {
    const { rows } = await pool.query(INSERT_SESSION, sessionParams);
    return rows.length ? send(res, 200, dto) : send(res, 403, { error: 'verification rejected', code: 'kyb_rejected' });
  }
  const { rows } = await pool.query(
    `WITH claim AS (
       INSERT INTO idempotency_records AS r (id, scope_hash, idempotency_key, organization_id, method, path, fingerprint, response_status, response_body, expires_at)
       VALUES ($10, $11, $12, $2, 'POST', '${COLLECTION}', $13, 200, $14, $15)
       ON CONFLICT (scope_hash, idempotency_key) DO UPDATE
         SET id = EXCLUDED.id, fingerprint = EXCLUDED.fingerprint, response_status = EXCLUDED.response_status,
             response_body = EXCLUDED.response_body, created_at = now(), expires_at = EXCLUDED.expires_at
         WHERE r.expires_at <= now()
       RETURNING 1),
     session AS (
       INSERT INTO checkout_sessions (id, organization_id, amount_units, description, status, order_id, escrow_template_id, metadata, expires_at, created_at, updated_at)
       SELECT $1, $2, $3, $4, 'open', $5, $6, $7, $8, $9, $9
        WHERE EXISTS (SELECT 1 FROM claim)
          AND NOT EXISTS (SELECT 1 FROM organization_verifications WHERE organization_id = $2 AND identity_status = 'rejected')
       RETURNING id)
     SELECT (SELECT count(*) FROM claim)::int AS claimed, (SELECT count(*) FROM session)::int AS inserted`,
    [...sessionParams, uuidv7(), scopeHash, idemKey, fingerprint, JSON.stringify(dto), new Date(now.getTime() + IDEMPOTENCY_TTL_MS)],
  );
  if (rows[0].claimed && rows[0].inserted) return send(res, 200, dto);
  if (rows[0].claimed) {
    // KYB rejected: the claim would store a 200 for a session that was not written; undo it.
    await pool.query('DELETE FROM idempotency_records WHERE scope_hash = $1 AND idempotency_key = $2', [scopeHash, idemKey]);
    return send(res, 403, { error: 'verification rejected', code: 'kyb_rejected' });
  }
  const found = await pool.query('SELECT fingerprint, response_status, response_body FROM idempotency_records WHERE scope_hash = $1 AND idempotency_key = $2', [scopeHash, idemKey]);
  if (!found.rows.length) return send(res, 409, { error: 'in flight', code: 'idempotency_conflict' });
  return replay(res, found.rows[0], fingerprint);
}

async function get(res, key, id) {
  if (!key.scopes.includes('checkout:read') && !key.scopes.includes('checkout:write')) {
    return send(res, 403, { error: 'missing scope', code: 'missing_scope' });
  }
  if (!UUID.test(id)) return send(res, 404, { error: 'checkout session not found', code: 'not_found' });
  const { rows } = await pool.query('SELECT * FROM checkout_sessions WHERE id = $1 AND organization_id = $2', [id, key.organizationId]);
  if (!rows.length) return send(res, 404, { error: 'checkout session not found', code: 'not_found' });
  send(res, 200, toDto(rows[0]));
}

async function handle(req, res) {
  const path = req.url.split('?')[0];
  if (path === '/health/live') return send(res, 200, { status: 'ok' });
  const item = req.method === 'GET' ? ITEM.exec(path) : null;
  if (!(req.method === 'POST' && path === COLLECTION) && !item) return send(res, 404, { error: 'not found', code: 'not_found' });
  const key = await authenticate(req, res);
  if (!key) return;
  return item ? get(res, key, item[1]) : create(req, res, key);
}

const server = createServer((req, res) => {
  handle(req, res).catch((err) => {
    if (!res.headersSent) send(res, err.status ?? 500, { error: 'internal error', code: 'internal' });
    else res.destroy();
  });
});
server.keepAliveTimeout = 65_000;

server.listen(PORT, '127.0.0.1', () => console.log(`baseline (${MODE}) listening on http://127.0.0.1:${PORT}`));

function shutdown() {
  server.close();
  server.closeAllConnections?.();
  redis.disconnect();
  pool.end().finally(() => process.exit(0));
}
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
