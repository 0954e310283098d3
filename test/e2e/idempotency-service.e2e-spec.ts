import { randomUUID } from 'node:crypto';
import { AppError } from '../../src/common/errors/app-error';
import { IdempotencyService, IdempotentRequest } from '../../src/kernel/idempotency/idempotency.service';
import { TransactionHost, TxHost } from '../../src/database/transaction';
import { createTestApp, TestApp } from '../support/app';
import { createOrg, TestOrg } from '../support/factories';

/**
 * IdempotencyService on its own (the domain service every transport uses, docs/architecture.md §5),
 * against the real database: what a refusal leaves behind and what an unwritten record does.
 */
describe('IdempotencyService', () => {
  let t: TestApp;
  let org: TestOrg;
  let service: IdempotencyService;
  let txHost: TxHost;

  beforeAll(async () => {
    t = await createTestApp();
    org = await createOrg(t.app);
    service = t.app.get(IdempotencyService);
    txHost = t.app.get(TransactionHost) as TxHost;
  });
  afterAll(() => t.close());

  const request = (key = randomUUID()): IdempotentRequest => ({
    organizationId: org.organizationId,
    scope: ['merchant', 'POST', '/test/idempotency-service'],
    key,
    fingerprint: 'f'.repeat(64),
    method: 'POST',
    path: '/test/idempotency-service',
  });
  /** A write of the business step: an organisation row named `marker` (any table would do). */
  const write = (marker: string) =>
    txHost.tx.query(`INSERT INTO organizations (id, name, handle) VALUES ($1, $2, $2)`, [randomUUID(), marker]);
  const rowsNamed = async (marker: string) =>
    ((await t.dataSource.query('SELECT count(*)::int AS n FROM organizations WHERE name = $1', [marker])) as Array<{ n: number }>)[0].n;
  const record = (key: string) =>
    t.dataSource.query('SELECT response_status, response_body FROM idempotency_records WHERE idempotency_key = $1', [key]) as Promise<
      Array<{ response_status: number; response_body: string }>
    >;

  it('a storable refusal after a write: the write rolls back to the savepoint, the refusal is recorded and replayed', async () => {
    const marker = `refused-${randomUUID().slice(0, 8)}`;
    const req = request();
    let runs = 0;
    const work = {
      run: async () => {
        runs++;
        await write(marker);
        throw new AppError('forbidden', 'not yours', { reason: 'test' });
      },
    };
    const first = await service.execute(req, work);
    expect(first).toEqual({ replayed: false, status: 403, body: { error: 'not yours', code: 'forbidden', details: { reason: 'test' } } });
    expect(await rowsNamed(marker)).toBe(0);
    expect(await record(req.key)).toEqual([{ response_status: 403, response_body: JSON.stringify(first.body) }]);
    const again = await service.execute(req, work);
    expect(again).toEqual({ ...first, replayed: true });
    expect(runs).toBe(1);
  });

  it('a success commits the write and its record together', async () => {
    const marker = `ok-${randomUUID().slice(0, 8)}`;
    const req = request();
    const outcome = await service.execute(req, {
      run: async () => {
        await write(marker);
        return { done: marker };
      },
    });
    expect(outcome).toEqual({ replayed: false, status: 200, body: { done: marker } });
    expect(await rowsNamed(marker)).toBe(1);
    expect(await record(req.key)).toEqual([{ response_status: 200, response_body: JSON.stringify({ done: marker }) }]);
  });

  it('a record that cannot be written (a live one appeared under the key) fails the call and rolls the effect back', async () => {
    const marker = `lost-${randomUUID().slice(0, 8)}`;
    const req = request();
    const call = service.execute(req, {
      run: async () => {
        await write(marker);
        // Another writer (outside the key's lock) records the key while this call runs.
        await t.dataSource.query(
          `INSERT INTO idempotency_records (id, scope_hash, idempotency_key, organization_id, method, path, fingerprint, response_status, response_body, expires_at)
           SELECT $1, scope_hash, $2, $3, 'POST', '/x', 'other', 200, '{}', now() + interval '1 hour'
             FROM (SELECT encode(sha256(convert_to($4, 'UTF8')), 'hex') AS scope_hash) s`,
          [randomUUID(), req.key, org.organizationId, [org.organizationId, ...req.scope].join('|')],
        );
        return { done: marker };
      },
    });
    await expect(call).rejects.toThrow(/was not written/);
    expect(await rowsNamed(marker)).toBe(0);
    expect((await record(req.key)).map((r) => r.response_body)).toEqual(['{}']);
  });

  it('a refusal of the prepare step is recorded under the lock; a later call replays it without preparing again', async () => {
    const req = request();
    let prepared = 0;
    const work = {
      prepare: () => {
        prepared++;
        return Promise.reject(new AppError('invalid_request', 'escrow is funded', { reason: 'invalid_state' }, 409));
      },
      run: () => Promise.resolve('never'),
    };
    expect((await service.execute(req, work)).status).toBe(409);
    expect(await service.execute(req, work)).toMatchObject({ replayed: true, status: 409 });
    expect(prepared).toBe(1);
  });

  it('404 and an unmined transaction (409 pending) are not stored', async () => {
    for (const err of [AppError.notFound('escrow'), new AppError('invalid_request', 'not mined', { reason: 'pending' }, 409)]) {
      const req = request();
      await expect(service.execute(req, { run: () => Promise.reject(err) })).rejects.toBe(err);
      expect(await record(req.key)).toEqual([]);
    }
  });
});
