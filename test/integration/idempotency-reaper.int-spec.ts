import { randomUUID } from 'node:crypto';
import { IdempotencyReaper } from '../../src/kernel/idempotency/idempotency-reaper.module';
import { IdempotencyRepository } from '../../src/kernel/idempotency/idempotency.repository';
import { TransactionHost } from '../../src/database/transaction';
import { createTestApp, TestApp } from '../support/app';
import { createOrg, TestOrg } from '../support/factories';

describe('idempotency reaper (worker maintenance job)', () => {
  let t: TestApp;
  let org: TestOrg;
  beforeAll(async () => {
    t = await createTestApp();
    org = await createOrg(t.app);
  });
  afterAll(() => t.close());

  const create = (key: string, description: string) =>
    t.http.post('/api/v1/checkout-sessions').set('X-Api-Key', org.key).set('Idempotency-Key', key).send({ amount: '5', description });

  it('deletes records past their TTL and keeps live ones; a reaped key runs anew', async () => {
    const expiredKey = randomUUID();
    const liveKey = randomUUID();
    await create(expiredKey, 'first').expect(200);
    await create(liveKey, 'live').expect(200);
    await t.dataSource.query(`UPDATE idempotency_records SET expires_at = now() - interval '1 second' WHERE idempotency_key = $1`, [expiredKey]);

    const reaper = new IdempotencyReaper(t.app.get(IdempotencyRepository), t.app.get(TransactionHost));
    const { deleted } = await reaper.process();

    expect(deleted).toBeGreaterThanOrEqual(1);
    const keys: Array<{ idempotency_key: string }> = await t.dataSource.query(
      'SELECT idempotency_key FROM idempotency_records WHERE idempotency_key = ANY($1)',
      [[expiredKey, liveKey]],
    );
    expect(keys.map((k) => k.idempotency_key)).toEqual([liveKey]);
    const rerun = await create(expiredKey, 'a different body is fine once the key has expired');
    expect(rerun.status).toBe(200);
    expect(rerun.headers['idempotent-replayed']).toBe('false');
    expect((await create(liveKey, 'changed')).status).toBe(422);
  });
});
