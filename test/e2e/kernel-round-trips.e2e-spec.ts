import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import { Client } from 'pg';
import { AppError } from '../../src/common/errors/app-error';
import { TransactionHost, TxHost } from '../../src/database/transaction';
import { IdempotencyService } from '../../src/kernel/idempotency/idempotency.service';
import { useOrgApp } from '../support/app';

jest.setTimeout(60_000);

/** The claim message: lock, record read, the check, and BEGIN + savepoint only when won. */
const CLAIM = expect.stringMatching(/^SELECT set_config\('pcp.claim_locked', pg_try_advisory_xact_lock\(.*; BEGIN; SAVEPOINT \w+$/);
/** The record and COMMIT in one message. */
const RECORD_AND_COMMIT = expect.stringMatching(/^WITH written AS \( INSERT INTO idempotency_records .*; COMMIT$/);

/**
 * PostgreSQL round trips per request on the hot path (issue 33 §2; DESIGN §5, §23; docs/decisions.md,
 * "Idempotency record and COMMIT in one round trip"): every statement message the pg driver sends
 * while the api serves one request is counted (one `Client.query` = one message answered by one
 * ReadyForQuery = one round trip), attributed to that request through an AsyncLocalStorage entered
 * where the HTTP server hands the request to Express. The figures are pinned: a round trip added
 * back to the kernel's idempotency path or to the read path fails here.
 */
describe('round trips per request (the kernel hot path)', () => {
  const ctx = useOrgApp();
  const inRequest = new AsyncLocalStorage<string[]>();
  const originalQuery = Client.prototype.query;
  /** Where the logs of the requests served go while {@link tripsOf} listens. */
  let sink: string[][] | null = null;

  beforeAll(() => {
    // Every request the server dispatches runs inside its own log (restored in afterAll).
    const server = ctx.t.app.getHttpServer() as Server;
    const listeners = server.listeners('request') as Array<(...args: unknown[]) => void>;
    server.removeAllListeners('request');
    for (const listener of listeners) {
      server.on('request', (...args: unknown[]) => {
        const log: string[] = [];
        sink?.push(log);
        inRequest.run(log, () => listener(...args));
      });
    }
    (Client.prototype as unknown as { query: (...args: unknown[]) => unknown }).query = function (this: Client, ...args: unknown[]) {
      const sql = typeof args[0] === 'string' ? args[0] : ((args[0] as { text?: string } | undefined)?.text ?? '?');
      inRequest.getStore()?.push(sql.replace(/\s+/g, ' ').trim());
      return (originalQuery as (...a: unknown[]) => unknown).apply(this, args);
    };
  });
  afterAll(() => {
    Client.prototype.query = originalQuery;
  });

  /** The statements messages sent to PostgreSQL while serving `send`'s request. */
  async function tripsOf<T>(send: () => PromiseLike<T>): Promise<{ res: T; trips: string[] }> {
    const logs: string[][] = [];
    sink = logs;
    try {
      const res = await send();
      expect(logs).toHaveLength(1);
      return { res, trips: logs[0] };
    } finally {
      sink = null;
    }
  }
  const create = (key: string, body: object = { amount: '5.00', description: 'round trips' }) =>
    ctx.t.http.post('/api/v1/checkout-sessions').set('X-Api-Key', ctx.org.key).set('Idempotency-Key', key).send(body);

  it('warms the pool and the credential cache', async () => {
    for (let i = 0; i < 3; i++) expect((await create(randomUUID())).status).toBe(200);
  });

  it('a checkout create under a key: 3 round trips (claim+BEGIN, the insert, record+COMMIT)', async () => {
    const { res, trips } = await tripsOf(() => create(randomUUID()));
    expect(res.status).toBe(200);
    expect({ n: trips.length, trips }).toEqual({ n: 3, trips: [CLAIM, expect.stringMatching(/^INSERT INTO checkout_sessions/), RECORD_AND_COMMIT] });
  });

  it('a replay of a create: 1 round trip (the claim, lost: no transaction opened)', async () => {
    const key = randomUUID();
    expect((await create(key)).status).toBe(200);
    const { res, trips } = await tripsOf(() => create(key));
    expect(res.status).toBe(200);
    expect(res.headers['idempotent-replayed']).toBe('true');
    expect({ n: trips.length, trips }).toEqual({ n: 1, trips: [CLAIM] });
  });

  it('the key reused for another request (422): as a replay', async () => {
    const key = randomUUID();
    expect((await create(key)).status).toBe(200);
    const { res, trips } = await tripsOf(() => create(key, { amount: '6.00', description: 'other' }));
    expect(res.status).toBe(422);
    expect({ n: trips.length, trips }).toEqual({ n: 1, trips: [CLAIM] });
  });

  it('a checkout get: 1 round trip', async () => {
    const id = (await create(randomUUID())).body.id as string;
    const { res, trips } = await tripsOf(() => ctx.t.http.get(`/api/v1/checkout-sessions/${id}`).set('X-Api-Key', ctx.org.key));
    expect(res.status).toBe(200);
    expect({ n: trips.length, trips }).toEqual({ n: 1, trips: [expect.stringMatching(/^SELECT .* FROM checkout_sessions WHERE id = \$1/)] });
  });

  it('the idempotency service: a storable refusal after a write costs 3 round trips too (ROLLBACK TO SAVEPOINT rides with the record)', async () => {
    const service = ctx.t.app.get(IdempotencyService);
    const txHost = ctx.t.app.get(TransactionHost) as TxHost;
    const log: string[] = [];
    const outcome = await inRequest.run(log, () =>
      service.execute(
        { organizationId: ctx.org.organizationId, scope: ['merchant', 'POST', '/test/round-trips'], key: randomUUID(), fingerprint: 'f'.repeat(64), method: 'POST', path: '/test/round-trips' },
        {
          run: async () => {
            await txHost.tx.query('SELECT 1');
            throw new AppError('forbidden', 'not yours', { reason: 'test' });
          },
        },
      ),
    );
    expect(outcome.status).toBe(403);
    expect({ n: log.length, log }).toEqual({ n: 3, log: [CLAIM, 'SELECT 1', expect.stringMatching(/^ROLLBACK TO SAVEPOINT \w+; WITH written AS \(.*COMMIT$/)] });
  });
});
