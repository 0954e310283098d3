import { createHash, randomUUID } from 'node:crypto';
import Redis from 'ioredis';
import { Client } from 'pg';
import { OrgsService } from '../../src/modules/orgs/orgs.service';
import { createTestApp, TestApp } from '../support/app';
import { expectError } from '../support/errors';
import { createKey, createOAuthClient, createOrg, TestOrg } from '../support/factories';
import { waitFor } from '../support/wait';

jest.setTimeout(60_000);

let lastIp = 0;
/** A client address no other test of this file has used. */
const freshIp = () => `203.0.113.${++lastIp}`;
const invalidKey = () => 'bk_live_' + randomUUID().replace(/-/g, '') + 'AAAAAAAAAAA';
const isolated = (env: Record<string, string>) => ({ REDIS_PREFIX: `${process.env.REDIS_PREFIX}-${randomUUID().slice(0, 8)}`, ...env });

/** A connection that holds ACCESS EXCLUSIVE locks on the credential tables while `fn` runs. */
async function withCredentialTablesLocked<T>(fn: (waiting: () => Promise<number>) => Promise<T>): Promise<T> {
  const locker = new Client({ connectionString: process.env.DATABASE_URL });
  await locker.connect();
  const waiting = async () =>
    Number(
      (
        await locker.query(
          `SELECT count(*)::int AS n FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
            WHERE NOT l.granted AND c.relname IN ('api_keys', 'oauth_tokens', 'oauth_clients')`,
        )
      ).rows[0].n,
    );
  try {
    await locker.query('BEGIN');
    await locker.query('LOCK TABLE api_keys, oauth_tokens, oauth_clients IN ACCESS EXCLUSIVE MODE');
    return await fn(waiting);
  } finally {
    await locker.query('ROLLBACK').catch(() => undefined);
    await locker.end();
  }
}

/**
 * The credential cache (docs/decisions.md, "Credential cache"): a credential resolved within
 * CREDENTIAL_CACHE_TTL_MS is not looked up again; a revocation through the service reaches every
 * replica's cache at once; the failed-authentication allowance still applies to cached credentials;
 * a revocation written by hand in SQL takes effect within the TTL.
 */
describe('credential cache', () => {
  let a: TestApp;
  let b: TestApp;
  let org: TestOrg;
  let prefix: string;

  beforeAll(async () => {
    const env = isolated({ AUTH_FAILURES_PER_MINUTE: '5', CREDENTIAL_CACHE_TTL_MS: '60000' });
    prefix = env.REDIS_PREFIX;
    a = await createTestApp(env);
    b = await createTestApp(env); // a second api replica on the same Redis prefix
    org = await createOrg(a.app);
  });
  afterAll(async () => {
    await a.close();
    await b.close();
  });

  it('a cached key answers without a database lookup; an uncached one waits for it', async () => {
    const cached = await createKey(a.app, org.organizationId, ['checkout:read']);
    const uncached = await createKey(a.app, org.organizationId, ['checkout:read']);
    expect((await a.http.get('/api/v1/checkout-sessions?limit=1').set('X-Api-Key', cached)).status).toBe(200);
    await withCredentialTablesLocked(async (waiting) => {
      // checkout_sessions is not locked: the cached key's request completes while api_keys is locked.
      expect((await a.http.get('/api/v1/checkout-sessions?limit=1').set('X-Api-Key', cached)).status).toBe(200);
      expect(await waiting()).toBe(0);
      const slow = a.http.get('/api/v1/checkout-sessions?limit=1').set('X-Api-Key', uncached).then((r) => r.status);
      await waitFor(async () => (await waiting()) === 1, { label: 'the uncached key waiting on api_keys' });
      return { slow }; // wrapped: awaiting it here would wait for the lock this connection holds
    }).then(async ({ slow }) => expect(await slow).toBe(200));
  });

  it('key revocation through the service reaches another replica that has the key cached, at once', async () => {
    const key = await createKey(a.app, org.organizationId, ['checkout:read']);
    expect((await a.http.get('/api/v1/me').set('X-Api-Key', key)).status).toBe(200);
    expect((await b.http.get('/api/v1/me').set('X-Api-Key', key)).status).toBe(200);
    const [{ id }] = await a.dataSource.query('SELECT id FROM api_keys WHERE secret_hash = $1', [createHash('sha256').update(key).digest()]);
    await a.app.get(OrgsService).revokeApiKey(id);
    expectError(await b.http.get('/api/v1/me').set('X-Api-Key', key), 401, 'unauthorized');
    expectError(await a.http.get('/api/v1/me').set('X-Api-Key', key), 401, 'unauthorized');
  });

  it('a revoked cached key answers 401 (not 403) on a route outside its scopes, and writes nothing on an idempotent POST', async () => {
    const key = await createKey(a.app, org.organizationId, ['checkout:read']);
    const writer = await createKey(a.app, org.organizationId, ['checkout:write']);
    expect((await a.http.get('/api/v1/me').set('X-Api-Key', key)).status).toBe(200);
    expect((await a.http.get('/api/v1/me').set('X-Api-Key', writer)).status).toBe(200);
    const ids = await a.dataSource.query('SELECT id FROM api_keys WHERE secret_hash = ANY($1)', [[key, writer].map((k) => createHash('sha256').update(k).digest())]);
    for (const { id } of ids) await a.app.get(OrgsService).revokeApiKey(id);
    const ip = freshIp(); // the two 401s spend this address's allowance, not the other tests'
    // Without the revocation, this key would get 403 missing_scope here.
    expectError(await b.http.post('/api/v1/checkout-sessions').set('X-Forwarded-For', ip).set('X-Api-Key', key).send({ amount: '1.00', description: 'x' }), 401, 'unauthorized');
    const orderId = `revoked-${randomUUID()}`;
    const res = await b.http.post('/api/v1/checkout-sessions').set('X-Forwarded-For', ip).set('X-Api-Key', writer).set('Idempotency-Key', randomUUID()).send({ amount: '1.00', description: 'x', orderId });
    expectError(res, 401, 'unauthorized');
    const rows = await a.dataSource.query('SELECT count(*)::int AS n FROM checkout_sessions WHERE order_id = $1', [orderId]);
    expect(rows[0].n).toBe(0);
  });

  it('OAuth client revocation kills its cached access tokens on every replica at once', async () => {
    const client = await createOAuthClient(a.app, org.organizationId, ['checkout:read']);
    const res = await a.http.post('/oauth/token').send({ grant_type: 'client_credentials', client_id: client.clientId, client_secret: client.clientSecret });
    const bearer = `Bearer ${res.body.access_token as string}`;
    expect((await a.http.get('/api/v1/me').set('Authorization', bearer)).status).toBe(200);
    expect((await b.http.get('/api/v1/me').set('Authorization', bearer)).status).toBe(200);
    await b.app.get(OrgsService).revokeOAuthClient(client.clientId);
    expectError(await a.http.get('/api/v1/me').set('Authorization', bearer), 401, 'unauthorized');
    expectError(await b.http.get('/api/v1/me').set('Authorization', bearer), 401, 'unauthorized');
  });

  it("a cached key's request costs one Redis command: its check also counts the request for the rate limit", async () => {
    const ip = freshIp();
    const get = () => a.http.get('/api/v1/me').set('X-Forwarded-For', ip).set('X-Api-Key', org.key);
    expect((await get()).status).toBe(200); // cached from here on
    const client = new Redis(process.env.REDIS_URL!);
    const monitor = await client.monitor();
    const commands: string[][] = [];
    monitor.on('monitor', (_time: string, args: string[]) => {
      if (args.some((arg) => arg.startsWith(`${prefix}:`))) commands.push(args);
    });
    const remaining: number[] = [];
    try {
      for (let i = 0; i < 4; i++) {
        const res = await get();
        expect(res.status).toBe(200);
        remaining.push(Number(/r=(\d+)/.exec(res.headers['ratelimit'] as string)![1]));
      }
      // MONITOR reports in execution order: once it shows a marker sent now, it has shown every command before it.
      await client.get(`${prefix}:monitor-marker`);
      await waitFor(async () => commands.some((c) => c[0].toLowerCase() === 'get' && c[1] === `${prefix}:monitor-marker`), { label: 'the monitor marker' });
    } finally {
      monitor.disconnect();
      client.disconnect();
    }
    // One EVALSHA per request, naming both the address's allowance keys and the key's rate-limit counter.
    const perRequest = commands.filter((c) => c[0].toLowerCase() === 'evalsha');
    expect(perRequest).toHaveLength(4);
    for (const c of perRequest) expect(c.some((arg) => arg.includes(':rl:default:cred:'))).toBe(true);
    // Counted as before: one per request, in order.
    expect(remaining.map((r, i) => r - remaining[0] + i)).toEqual([0, 0, 0, 0]);
  });

  it('an address that spent its failed-authentication allowance gets 429 even with a cached valid key, and no lookup runs', async () => {
    const ip = freshIp();
    expect((await a.http.get('/api/v1/me').set('X-Forwarded-For', ip).set('X-Api-Key', org.key)).status).toBe(200);
    for (let i = 0; i < 5; i++) expect((await a.http.get('/api/v1/me').set('X-Forwarded-For', ip).set('X-Api-Key', invalidKey())).status).toBe(401);
    expectError(await a.http.get('/api/v1/me').set('X-Forwarded-For', ip).set('X-Api-Key', org.key), 429, 'rate_limited');
    expect((await a.http.get('/api/v1/me').set('X-Forwarded-For', freshIp()).set('X-Api-Key', org.key)).status).toBe(200);
  });
});

describe('credential cache TTL', () => {
  let t: TestApp;
  let org: TestOrg;

  beforeAll(async () => {
    t = await createTestApp(isolated({ CREDENTIAL_CACHE_TTL_MS: '300' }));
    org = await createOrg(t.app);
  });
  afterAll(() => t.close());

  it('a revocation written by hand in SQL (no marker) is honoured once the entry expires', async () => {
    const key = await createKey(t.app, org.organizationId, ['checkout:read']);
    expect((await t.http.get('/api/v1/me').set('X-Api-Key', key)).status).toBe(200);
    await t.dataSource.query('UPDATE api_keys SET revoked_at = now() WHERE secret_hash = $1', [createHash('sha256').update(key).digest()]);
    await waitFor(async () => (await t.http.get('/api/v1/me').set('X-Api-Key', key)).status === 401, { timeoutMs: 5_000, label: 'the hand-revoked key refused' });
  });

  it('CREDENTIAL_CACHE_TTL_MS=0 looks the credential up on every request', async () => {
    const off = await createTestApp(isolated({ CREDENTIAL_CACHE_TTL_MS: '0' }));
    try {
      const key = await createKey(off.app, org.organizationId, ['checkout:read']);
      expect((await off.http.get('/api/v1/me').set('X-Api-Key', key)).status).toBe(200);
      await off.dataSource.query('UPDATE api_keys SET revoked_at = now() WHERE secret_hash = $1', [createHash('sha256').update(key).digest()]);
      expectError(await off.http.get('/api/v1/me').set('X-Api-Key', key), 401, 'unauthorized');
    } finally {
      await off.close();
    }
  });
});
