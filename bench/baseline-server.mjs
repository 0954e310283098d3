// Baseline for bench/checkout.mjs: the same two checkout-session operations as the api, written
// as a bare node:http + pg server on the same schema, with nothing but what the work needs:
//   POST /api/v1/checkout-sessions   X-Api-Key check, body validation, then in one transaction
//                                    INSERT checkout_sessions + INSERT idempotency_records
//   GET  /api/v1/checkout-sessions/:id   X-Api-Key check, SELECT by id and organization_id
//   GET  /health/live
// The X-Api-Key check is a SHA-256 lookup in api_keys per request, like the api's.
// Env: PORT (required), DATABASE_URL, CHECKOUT_BASE_URL, PG_POOL_MAX (default 20, the api's pool size).
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
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
    const { rows } = await client.query(
      `INSERT INTO checkout_sessions (id, organization_id, amount_units, description, status, order_id, shop_domain,
         redirect_url, webhook_url, escrow_template_id, metadata, escrow_id, expires_at)
       VALUES ($1, $2, $3, $4, 'open', $5, NULL, NULL, NULL, $6, $7, NULL, $8)
       RETURNING *`,
      [id, key.organizationId, units, body.description, body.orderId ?? null, body.escrowTemplateId ?? 'custom', body.metadata ?? null, new Date(now + TTL_MS)],
    );
    const dto = toDto(rows[0]);
    if (typeof idemKey === 'string') {
      const scopeHash = createHash('sha256').update(`${key.organizationId}|merchant|POST|${COLLECTION}`).digest('hex');
      const fingerprint = createHash('sha256').update(JSON.stringify(body)).digest('hex');
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
  pool.end().finally(() => process.exit(0));
}
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
