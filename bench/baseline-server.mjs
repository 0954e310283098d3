// Baseline for bench/checkout.mjs: the same two checkout-session operations as the api, written
// as a bare node:http + pg server on the same schema, doing the same durable work and nothing
// else, so the ratio measures our framework and code, not skipped work:
//   every request   X-Api-Key check (SHA-256 lookup in api_keys), the same rate-limit call
//                   (the same Lua script by EVALSHA on the same Redis key shape)
//   POST /api/v1/checkout-sessions   body validation, then one transaction: the idempotency
//                                    key's advisory lock, the record lookup (a statement of its
//                                    own, after the lock), INSERT checkout_sessions, INSERT
//                                    idempotency_records (docs/architecture.md §5)
//   GET  /api/v1/checkout-sessions/:id   SELECT by id and organization_id
//   GET  /health/live
// Env: PORT (required), DATABASE_URL, REDIS_URL, REDIS_PREFIX, CHECKOUT_BASE_URL,
// PG_POOL_MAX (default 20, the api's pool size).
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import Redis from 'ioredis';
import pg from 'pg';
import { v7 as uuidv7 } from 'uuid';

const PORT = Number(process.env.PORT);
const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/pcp_bench';
const PAY_BASE = (process.env.CHECKOUT_BASE_URL ?? 'http://localhost:3000').replace(/\/$/, '');
const TTL_MS = 24 * 3600_000;
const IDEMPOTENCY_TTL_MS = 24 * 3600_000;
const AMOUNT = /^(0|[1-9]\d*)(\.\d{1,6})?$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ITEM = /^\/api\/v1\/checkout-sessions\/([^/?]+)$/;
const COLLECTION = '/api/v1/checkout-sessions';

const pool = new pg.Pool({ connectionString: DATABASE_URL, max: Number(process.env.PG_POOL_MAX ?? 20) });
const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
const REDIS_PREFIX = process.env.REDIS_PREFIX ?? 'pcp';
// The api's fixed-window counter (src/kernel/rate-limit/redis-throttler.storage.ts), run the same way.
redis.defineCommand('rateLimit', {
  numberOfKeys: 1,
  lua: `
local hits = redis.call('INCR', KEYS[1])
if hits == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); ttl = tonumber(ARGV[1]) end
return {hits, ttl}`,
});

async function rateLimited(res, key) {
  const [hits] = await redis.rateLimit(`${REDIS_PREFIX}:rl:default:cred:${key.id}`, 60_000);
  res.setHeader('RateLimit-Policy', '"default";q=1000000000;w=60');
  if (hits > 1_000_000_000) {
    send(res, 429, { error: 'rate limited', code: 'rate_limited' });
    return true;
  }
  return false;
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

/** @returns {Promise<{id: string, organizationId: string, scopes: string[]} | null>} */
async function authenticate(req) {
  const secret = req.headers['x-api-key'];
  if (typeof secret !== 'string' || secret.length === 0 || secret.length > 200) return null;
  const digest = createHash('sha256').update(secret, 'utf8').digest();
  const { rows } = await pool.query('SELECT id, organization_id, scopes FROM api_keys WHERE secret_hash = $1 AND revoked_at IS NULL', [digest]);
  return rows.length ? { id: rows[0].id, organizationId: rows[0].organization_id, scopes: rows[0].scopes } : null;
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

async function create(req, res, key) {
  if (!key.scopes.includes('checkout:write')) return send(res, 403, { error: 'missing scope', code: 'missing_scope' });
  const idemKey = req.headers['idempotency-key'];
  let body;
  try {
    body = JSON.parse(await readBody(req));
  } catch {
    return send(res, 400, { error: 'malformed JSON', code: 'invalid_request' });
  }
  if (typeof body?.amount !== 'string' || !AMOUNT.test(body.amount) || !/[1-9]/.test(body.amount)) {
    return send(res, 400, { error: 'amount is invalid', code: 'invalid_request' });
  }
  if (typeof body.description !== 'string' || body.description.length < 1 || body.description.length > 1000) {
    return send(res, 400, { error: 'description is invalid', code: 'invalid_request' });
  }
  const [whole, fraction = ''] = body.amount.split('.');
  const units = (BigInt(whole) * 1_000_000n + BigInt(fraction.padEnd(6, '0'))).toString();
  const id = uuidv7();
  const now = Date.now();
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    let scopeHash;
    let fingerprint;
    if (typeof idemKey === 'string') {
      scopeHash = createHash('sha256').update(`${key.organizationId}|merchant|POST|${COLLECTION}`).digest('hex');
      fingerprint = createHash('sha256').update(JSON.stringify(body)).digest('hex');
      const { rows: lock } = await client.query('SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0)) AS locked', [`${scopeHash}:${idemKey}`]);
      if (!lock[0].locked) {
        await client.query('ROLLBACK');
        return send(res, 409, { error: 'in flight', code: 'idempotency_conflict' });
      }
      const { rows: found } = await client.query(
        'SELECT fingerprint, response_status, response_body FROM idempotency_records WHERE scope_hash = $1 AND idempotency_key = $2 AND expires_at > now()',
        [scopeHash, idemKey],
      );
      if (found.length) {
        await client.query('ROLLBACK');
        return send(res, found[0].response_status, JSON.parse(found[0].response_body));
      }
    }
    const { rows } = await client.query(
      `INSERT INTO checkout_sessions (id, organization_id, amount_units, description, status, order_id, shop_domain,
         redirect_url, webhook_url, escrow_template_id, metadata, escrow_id, expires_at)
       VALUES ($1, $2, $3, $4, 'open', $5, NULL, NULL, NULL, $6, $7, NULL, $8)
       RETURNING *`,
      [id, key.organizationId, units, body.description, body.orderId ?? null, body.escrowTemplateId ?? 'custom', body.metadata ?? null, new Date(now + TTL_MS)],
    );
    const dto = toDto(rows[0]);
    if (scopeHash) {
      await client.query(
        `INSERT INTO idempotency_records (id, scope_hash, idempotency_key, organization_id, method, path, fingerprint,
           response_status, response_body, expires_at)
         VALUES ($1, $2, $3, $4, 'POST', $5, $6, 200, $7, $8)`,
        [uuidv7(), scopeHash, idemKey, key.organizationId, COLLECTION, fingerprint, JSON.stringify(dto), new Date(now + IDEMPOTENCY_TTL_MS)],
      );
    }
    await client.query('COMMIT');
    send(res, 200, dto);
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release();
  }
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
  const key = await authenticate(req);
  if (!key) return send(res, 401, { error: 'unauthorized', code: 'unauthorized' });
  if (await rateLimited(res, key)) return;
  return item ? get(res, key, item[1]) : create(req, res, key);
}

const server = createServer((req, res) => {
  handle(req, res).catch((err) => {
    if (!res.headersSent) send(res, err.status ?? 500, { error: 'internal error', code: 'internal' });
    else res.destroy();
  });
});
server.keepAliveTimeout = 65_000;

server.listen(PORT, '127.0.0.1', () => console.log(`baseline listening on http://127.0.0.1:${PORT}`));

function shutdown() {
  server.close();
  server.closeAllConnections?.();
  redis.disconnect();
  pool.end().finally(() => process.exit(0));
}
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
