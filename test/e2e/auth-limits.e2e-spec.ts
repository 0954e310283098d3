import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { createTestApp, TestApp } from '../support/app';
import { OrgsService } from '../../src/modules/orgs/orgs.service';
import { expectError } from '../support/errors';
import { createOAuthClient, createOrg, TestOrg } from '../support/factories';
import { waitFor } from '../support/wait';

jest.setTimeout(60_000);

/** A fresh client address per test, sent through the trusted loopback proxy (X-Forwarded-For). */
/** A client address no other test of this file has used (a random pick could collide with a spent allowance). */
let lastIp = 0;
const freshIp = () => {
  lastIp++;
  return `198.51.${100 + Math.floor(lastIp / 250)}.${(lastIp % 250) + 1}`;
};
const invalidKey = () => 'bk_live_' + randomUUID().replace(/-/g, '') + 'AAAAAAAAAAA';

/** Its own Redis prefix per app, so counters of one describe never leak into another. */
const isolated = (env: Record<string, string>) => ({ REDIS_PREFIX: `${process.env.REDIS_PREFIX}-${randomUUID().slice(0, 8)}`, ...env });

async function token(t: TestApp, client: { clientId: string; clientSecret: string }): Promise<string> {
  const res = await t.http.post('/oauth/token').send({ grant_type: 'client_credentials', client_id: client.clientId, client_secret: client.clientSecret });
  expect(res.status).toBe(200);
  return res.body.access_token as string;
}

/**
 * Failed authentication is throttled per client IP before any credential lookup
 * (docs/decisions.md "Authentication failures"): AUTH_FAILURES_PER_MINUTE failures, then 429.
 */
describe('per-IP limit on failed authentication (AUTH_FAILURES_PER_MINUTE=5)', () => {
  let t: TestApp;
  let org: TestOrg;

  beforeAll(async () => {
    t = await createTestApp(isolated({ AUTH_FAILURES_PER_MINUTE: '5' }));
    org = await createOrg(t.app);
  });
  afterAll(() => t.close());

  it('invalid keys from one IP: 401 five times, then 429 rate_limited with Retry-After, also for a valid key; other IPs unaffected', async () => {
    const ip = freshIp();
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) statuses.push((await t.http.get('/api/v1/me').set('X-Forwarded-For', ip).set('X-Api-Key', invalidKey())).status);
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429, 429, 429, 429, 429, 429, 429]);
    const limited = await t.http.get('/api/v1/me').set('X-Forwarded-For', ip).set('X-Api-Key', org.key);
    expectError(limited, 429, 'rate_limited');
    const retryAfter = Number(limited.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect((await t.http.get('/api/v1/me').set('X-Forwarded-For', freshIp()).set('X-Api-Key', org.key)).status).toBe(200);
  });

  it('successful requests do not spend the allowance; missing and malformed credentials do', async () => {
    const ip = freshIp();
    for (let i = 0; i < 20; i++) expect((await t.http.get('/api/v1/me').set('X-Forwarded-For', ip).set('X-Api-Key', org.key)).status).toBe(200);
    expect((await t.http.get('/api/v1/me').set('X-Forwarded-For', ip)).status).toBe(401);
    expect((await t.http.get('/api/v1/me').set('X-Forwarded-For', ip).set('Authorization', 'Basic eDp5')).status).toBe(401);
    for (let i = 0; i < 3; i++) expect((await t.http.get('/api/v1/me').set('X-Forwarded-For', ip).set('X-Api-Key', invalidKey())).status).toBe(401);
    expect((await t.http.get('/api/v1/me').set('X-Forwarded-For', ip).set('X-Api-Key', invalidKey())).status).toBe(429);
  });

  it('bad client secrets at POST /oauth/token count as failures too', async () => {
    const ip = freshIp();
    const client = await createOAuthClient(t.app, org.organizationId, ['checkout:read']);
    const attempt = (secret: string) =>
      t.http.post('/oauth/token').set('X-Forwarded-For', ip).send({ grant_type: 'client_credentials', client_id: client.clientId, client_secret: secret });
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) statuses.push((await attempt(`bacs_guess${i}`)).status);
    expect(statuses).toEqual([401, 401, 401, 401, 401, 429, 429]);
    expect((await attempt(client.clientSecret)).status).toBe(429);
  });

  it('50 concurrent guesses from one IP: exactly 5 reach a lookup (401), 45 answer 429', async () => {
    const ip = freshIp();
    const results = await Promise.all(
      Array.from({ length: 50 }, () => t.http.get('/api/v1/me').set('X-Forwarded-For', ip).set('X-Api-Key', invalidKey())),
    );
    const count = (s: number) => results.filter((r) => r.status === s).length;
    expect({ 401: count(401), 429: count(429) }).toEqual({ 401: 5, 429: 45 });
  });

  it('over the limit no credential is looked up: with the credential tables locked, 429s still answer; under the limit a request waits on the lock', async () => {
    const ip = freshIp();
    for (let i = 0; i < 5; i++) expect((await t.http.get('/api/v1/me').set('X-Forwarded-For', ip).set('X-Api-Key', invalidKey())).status).toBe(401);
    const locker = new Client({ connectionString: process.env.DATABASE_URL });
    await locker.connect();
    /** Statements waiting for a lock on a credential table: a lookup in progress. */
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
      // Any lookup now waits until ROLLBACK and shows up in pg_locks; the over-limit requests must answer instead.
      const over = Promise.all([
        t.http.get('/api/v1/me').set('X-Forwarded-For', ip).set('X-Api-Key', invalidKey()),
        t.http.get('/api/v1/me').set('X-Forwarded-For', ip).set('X-Api-Key', org.key),
        t.http.get('/api/v1/me').set('X-Forwarded-For', ip).set('Authorization', 'Bearer bat_' + 'Z'.repeat(43)),
      ]).then((rs) => ({ answered: rs.map((r) => r.status) }));
      const blocked = waitFor(async () => (await waiting()) > 0, { timeoutMs: 50_000, label: 'a lookup on a locked table' }).then(() => ({ waitingOnLock: true }));
      expect(await Promise.race([over, blocked.catch(() => ({ waitingOnLock: false }))])).toEqual({ answered: [429, 429, 429] });
      expect(await waiting()).toBe(0);
      // Control: the same lock does catch a lookup. A request from a fresh IP waits on it.
      const under = t.http.get('/api/v1/me').set('X-Forwarded-For', freshIp()).set('X-Api-Key', invalidKey()).then((r) => r.status);
      await waitFor(async () => (await waiting()) === 1, { label: 'a lookup waiting on the locked api_keys' });
      await locker.query('ROLLBACK');
      expect(await under).toBe(401);
    } finally {
      await locker.query('ROLLBACK').catch(() => undefined);
      await locker.end();
    }
  });
});

describe('X-Forwarded-For and TRUSTED_PROXIES', () => {
  it('default (loopback trusted): the forwarded address is the client, so two forwarded clients have separate allowances', async () => {
    const t = await createTestApp(isolated({ AUTH_FAILURES_PER_MINUTE: '2' }));
    try {
      const [a, b] = ['203.0.113.10', '203.0.113.11'];
      for (let i = 0; i < 2; i++) expect((await t.http.get('/api/v1/me').set('X-Forwarded-For', a).set('X-Api-Key', invalidKey())).status).toBe(401);
      expect((await t.http.get('/api/v1/me').set('X-Forwarded-For', a).set('X-Api-Key', invalidKey())).status).toBe(429);
      expect((await t.http.get('/api/v1/me').set('X-Forwarded-For', b).set('X-Api-Key', invalidKey())).status).toBe(401);
    } finally {
      await t.close();
    }
  });

  it('from a peer that is not a trusted proxy, X-Forwarded-For is ignored: rotating it does not buy more guesses', async () => {
    const t = await createTestApp(isolated({ AUTH_FAILURES_PER_MINUTE: '2', TRUSTED_PROXIES: '10.0.0.0/8' }));
    try {
      expect((await t.http.get('/api/v1/me').set('X-Forwarded-For', '203.0.113.20').set('X-Api-Key', invalidKey())).status).toBe(401);
      expect((await t.http.get('/api/v1/me').set('X-Forwarded-For', '203.0.113.21').set('X-Api-Key', invalidKey())).status).toBe(401);
      expect((await t.http.get('/api/v1/me').set('X-Forwarded-For', '203.0.113.22').set('X-Api-Key', invalidKey())).status).toBe(429);
    } finally {
      await t.close();
    }
  });
});

describe('OAuth tokens are limited per OAuth client (RATE_LIMIT_PER_MINUTE=4)', () => {
  let t: TestApp;
  let org: TestOrg;

  beforeAll(async () => {
    t = await createTestApp(isolated({ RATE_LIMIT_PER_MINUTE: '4' }));
    org = await createOrg(t.app);
  });
  afterAll(() => t.close());

  it('two bat_ tokens of one client share one bucket; another client has its own', async () => {
    const client = await createOAuthClient(t.app, org.organizationId, ['checkout:read']);
    const [first, second] = [await token(t, client), await token(t, client)];
    expect(first).not.toBe(second);
    const me = (bearer: string) => t.http.get('/api/v1/me').set('Authorization', `Bearer ${bearer}`);
    const statuses = [(await me(first)).status, (await me(first)).status, (await me(second)).status, (await me(second)).status, (await me(second)).status];
    expect(statuses).toEqual([200, 200, 200, 200, 429]);
    expectError(await me(first), 429, 'rate_limited');
    const other = await token(t, await createOAuthClient(t.app, org.organizationId, ['checkout:read']));
    expect((await me(other)).status).toBe(200);
  });
});

describe('revocation and operator routes', () => {
  let t: TestApp;
  let org: TestOrg;
  const OPERATOR_TOKEN = 'ops-token-for-the-metrics-test-0123';

  beforeAll(async () => {
    t = await createTestApp({ OPERATOR_TOKEN });
    org = await createOrg(t.app);
  });
  afterAll(() => t.close());

  it("revoking an OAuth client invalidates its access tokens at once", async () => {
    const client = await createOAuthClient(t.app, org.organizationId, ['checkout:read']);
    const bearer = await token(t, client);
    expect((await t.http.get('/api/v1/me').set('Authorization', `Bearer ${bearer}`)).status).toBe(200);
    await t.app.get(OrgsService).revokeOAuthClient(client.clientId);
    expectError(await t.http.get('/api/v1/me').set('Authorization', `Bearer ${bearer}`), 401, 'unauthorized');
  });

  it('/metrics on the api port needs Authorization: Bearer OPERATOR_TOKEN', async () => {
    expectError(await t.http.get('/metrics'), 401, 'unauthorized');
    expectError(await t.http.get('/metrics').set('Authorization', 'Bearer wrong-token-0123456789'), 401, 'unauthorized');
    expectError(await t.http.get('/metrics').set('Authorization', `Bearer ${org.key}`), 401, 'unauthorized');
    const ok = await t.http.get('/metrics').set('Authorization', `Bearer ${OPERATOR_TOKEN}`);
    expect(ok.status).toBe(200);
    expect(ok.text).toMatch(/^http_request_duration_seconds_bucket\{/m);
  });
});
