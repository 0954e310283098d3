import { TransactionHost } from '@nestjs-cls/transactional';
import { queryRows, type TxHost } from '../../src/database/transaction';
import { createTestApp, TestApp } from '../support/app';

jest.setTimeout(30_000);

/** queryRows (src/database/transaction.ts): the pg driver directly, on the transaction's connection or the pool. */
describe('queryRows', () => {
  let t: TestApp;
  let txHost: TxHost;
  const table = `query_rows_probe_${process.pid}`;

  beforeAll(async () => {
    t = await createTestApp();
    txHost = t.app.get(TransactionHost) as TxHost;
    await t.dataSource.query(`CREATE TABLE ${table} (id int PRIMARY KEY, note text)`);
  });
  afterAll(async () => {
    await t.dataSource.query(`DROP TABLE IF EXISTS ${table}`);
    await t.close();
  });

  it('runs inside the caller transaction: it sees that transaction, and its rollback undoes the statement', async () => {
    await expect(
      txHost.withTransaction(async () => {
        await txHost.tx.query(`INSERT INTO ${table} (id, note) VALUES (1, 'via typeorm')`);
        const seen = await queryRows<{ id: number; note: string }>(txHost, `SELECT id, note FROM ${table} WHERE id = $1`, [1]);
        expect(seen).toEqual([{ id: 1, note: 'via typeorm' }]);
        expect(await queryRows(txHost, `INSERT INTO ${table} (id, note) VALUES ($1, $2) RETURNING id`, [2, 'raw'])).toEqual([{ id: 2 }]);
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(await queryRows(txHost, `SELECT id FROM ${table}`, [])).toEqual([]);
  });

  it('commits with the transaction, and outside one runs on the pool', async () => {
    await txHost.withTransaction(() => queryRows(txHost, `INSERT INTO ${table} (id, note) VALUES ($1, $2) RETURNING id`, [3, 'kept']));
    expect(await queryRows<{ note: string }>(txHost, `SELECT note FROM ${table} WHERE id = $1`, [3])).toEqual([{ note: 'kept' }]);
  });

  it('throws the driver error with its SQLSTATE', async () => {
    await expect(queryRows(txHost, `INSERT INTO ${table} (id, note) VALUES ($1, $2)`, [3, 'twin'])).rejects.toMatchObject({ code: '23505' });
  });
});
