import { randomUUID } from 'node:crypto';
import { expectError } from '../support/errors';
import { createOrg, TestOrg } from '../support/factories';
import { createTestApp, TestApp } from '../support/app';
import { freePort } from '../support/processes';
import { TcpProxy } from '../support/tcp-proxy';
import { waitFor } from '../support/wait';

jest.setTimeout(120_000);

/**
 * The readiness probe of the Kubernetes manifests (DESIGN §23, docs/decisions.md "Kubernetes"):
 * `/health/serving` fails when PostgreSQL or Redis does not answer, and only then. A dead chain
 * node leaves the replica in service; the API answers 503 itself on the requests that need the
 * node, and `/health/ready` (the full picture) reports it. PostgreSQL and Redis go "down" by
 * cutting a TCP proxy in front of the shared services, never by stopping them.
 */
describe('/health/serving (readiness: PostgreSQL and Redis only)', () => {
  let pg: TcpProxy;
  let redis: TcpProxy;
  let t: TestApp;

  beforeAll(async () => {
    const db = new URL(process.env.DATABASE_URL!);
    const rd = new URL(process.env.REDIS_URL!);
    pg = await TcpProxy.start(db.hostname, Number(db.port || 5432));
    redis = await TcpProxy.start(rd.hostname, Number(rd.port || 6379));
    t = await createTestApp({
      DATABASE_URL: pg.rewrite(process.env.DATABASE_URL!),
      REDIS_URL: redis.rewrite(process.env.REDIS_URL!),
      REDIS_PREFIX: `${process.env.REDIS_PREFIX}-${randomUUID().slice(0, 8)}`,
    });
  });
  afterAll(async () => {
    await pg?.restore();
    await redis?.restore();
    await t?.close();
    await pg?.stop();
    await redis?.stop();
  });

  const serving = () => t.http.get('/health/serving');

  it('answers 200 with database and redis up, and checks nothing else', async () => {
    const res = await serving();
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('ok');
    expect(Object.keys(res.body.info).sort()).toEqual(['database', 'redis']);
  });

  it('PostgreSQL down → 503 unavailable naming the database; back → 200', async () => {
    await pg.cut();
    const res = await serving();
    expect(expectError(res, 503, 'unavailable')).toMatchObject({ checks: { database: { status: 'down' }, redis: { status: 'up' } } });
    expect(res.headers['retry-after']).toBe('2');
    expect((await t.http.get('/health/live')).status).toBe(200); // liveness stays up: no restart for a database outage
    await pg.restore();
    await waitFor(async () => (await serving()).status === 200, { label: 'serving after PostgreSQL is back' });
  });

  it('Redis down → 503 unavailable naming redis; back → 200', async () => {
    await redis.cut();
    const res = await serving();
    expect(expectError(res, 503, 'unavailable')).toMatchObject({ checks: { redis: { status: 'down' }, database: { status: 'up' } } });
    await redis.restore();
    await waitFor(async () => (await serving()).status === 200, { label: 'serving after Redis is back' });
  });
});

describe('/health/serving with the chain node down', () => {
  let dead: TestApp;
  let org: TestOrg;

  beforeAll(async () => {
    // A port nobody listens on: every RPC call is refused.
    dead = await createTestApp({
      RPC_URL: `http://127.0.0.1:${await freePort()}`,
      RPC_TIMEOUT_MS: '1000',
      REDIS_PREFIX: `${process.env.REDIS_PREFIX}-${randomUUID().slice(0, 8)}`,
    });
    org = await createOrg(dead.app, { payoutAddress: '0x' + '33'.repeat(20) });
  });
  afterAll(async () => {
    await dead?.close();
  });

  it('stays ready (200) while /health/ready reports the relayer down', async () => {
    expect((await dead.http.get('/health/serving')).status).toBe(200);
    const full = await dead.http.get('/health/ready');
    expect(expectError(full, 503, 'unavailable')).toMatchObject({ checks: { relayer: { status: 'down' }, database: { status: 'up' }, redis: { status: 'up' } } });
  });

  it('the API answers 503 unavailable itself on a request that needs the node', async () => {
    const res = await dead.http.get('/api/v1/payout-balance').set('X-Api-Key', org.key);
    expect(expectError(res, 503, 'unavailable')).toMatchObject({ reason: 'chain_unavailable' });
    // …and requests that do not need the node are served by the same replica.
    expect((await dead.http.get('/api/v1/me').set('X-Api-Key', org.key)).status).toBe(200);
  });
});
