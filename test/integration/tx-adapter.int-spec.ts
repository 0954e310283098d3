import { DataSource, EntityManager } from 'typeorm';
import { dataSourceOptions } from '../../src/database/data-source';
import { BeginDeclined, RawConnection, TxOptions, TypeOrmTxAdapter } from '../../src/database/transaction';

/**
 * The transaction adapter's `begin` option (src/database/transaction.ts; docs/decisions.md,
 * "Idempotency claim in one round trip"), on a real PostgreSQL with a pool of ONE connection, so
 * every check after a transaction runs on the very connection that transaction used: a failed
 * first round trip leaves no aborted transaction behind, a failed body rolls back, nesting uses
 * savepoints, and a success commits.
 */
describe('TypeOrmTxAdapter with a begin step (one pooled connection)', () => {
  let ds: DataSource;
  let wrap: (options: TxOptions, fn: (em: EntityManager) => Promise<unknown>) => Promise<unknown>;
  let nested: (em: EntityManager, fn: (em: EntityManager) => Promise<unknown>) => Promise<unknown>;
  const table = `tx_adapter_${process.pid}`;

  beforeAll(async () => {
    const base = dataSourceOptions(process.env.DATABASE_URL!);
    ds = new DataSource({ ...base, extra: { ...(base.extra as object), max: 1 } } as typeof base);
    await ds.initialize();
    await ds.query(`CREATE TABLE IF NOT EXISTS ${table} (n int PRIMARY KEY)`);
    const factory = new TypeOrmTxAdapter(null).optionsFactory(ds);
    wrap = (options, fn) => {
      let em: EntityManager | undefined;
      return factory.wrapWithTransaction(options, () => fn(em!), (client) => (em = client));
    };
    nested = (outer, fn) => {
      let em: EntityManager | undefined;
      return factory.wrapWithNestedTransaction(undefined, () => fn(em!), (client) => (em = client), outer);
    };
  });
  afterAll(async () => {
    await ds?.query(`DROP TABLE IF EXISTS ${table}`);
    await ds?.destroy();
  });
  beforeEach(() => ds.query(`TRUNCATE ${table}`));

  const rows = async () => (await ds.query(`SELECT n FROM ${table} ORDER BY n`)).map((r: { n: number }) => r.n);
  /**
   * True when the one pooled connection is outside any transaction: then this statement is its own
   * transaction, and now() (transaction start) equals statement_timestamp(); inside a transaction
   * left open earlier, now() is older.
   */
  const outsideTransaction = async () => {
    const [{ own }] = await ds.query('SELECT now() = statement_timestamp() AS own');
    return own === true;
  };
  const beginWith = (sql: string): TxOptions => ({ begin: async (c: RawConnection) => void (await c.query(`BEGIN; ${sql}`)) });

  it('a success commits what the begin step and the body wrote, on one transaction', async () => {
    await wrap(beginWith(`INSERT INTO ${table} VALUES (1)`), (em) => em.query(`INSERT INTO ${table} VALUES (2)`));
    expect(await rows()).toEqual([1, 2]);
    expect(await outsideTransaction()).toBe(true);
  });

  it('a begin step that fails after BEGIN rolls back: the pooled connection is usable and holds no transaction', async () => {
    await expect(wrap(beginWith(`INSERT INTO ${table} VALUES (1); SELECT 1/0`), async () => 'never')).rejects.toThrow(/division by zero/);
    expect(await rows()).toEqual([]);
    expect(await outsideTransaction()).toBe(true);
    // A begin step that throws in JavaScript after its statements succeeded rolls back too.
    const throwing: TxOptions = {
      begin: async (c) => {
        await c.query(`BEGIN; INSERT INTO ${table} VALUES (3)`);
        throw new Error('parse failure');
      },
    };
    await expect(wrap(throwing, async () => 'never')).rejects.toThrow('parse failure');
    expect(await rows()).toEqual([]);
    expect(await outsideTransaction()).toBe(true);
  });

  it('a body that throws rolls back the begin step and the body', async () => {
    await expect(
      wrap(beginWith(`INSERT INTO ${table} VALUES (1)`), async (em) => {
        await em.query(`INSERT INTO ${table} VALUES (2)`);
        throw new Error('refused');
      }),
    ).rejects.toThrow('refused');
    expect(await rows()).toEqual([]);
    expect(await outsideTransaction()).toBe(true);
  });

  it('a nested transaction inside is a savepoint: its failure keeps the outer work, which commits', async () => {
    await wrap(beginWith(`INSERT INTO ${table} VALUES (1)`), async (em) => {
      await expect(
        nested(em, async (inner) => {
          await inner.query(`INSERT INTO ${table} VALUES (2)`);
          throw new Error('inner');
        }),
      ).rejects.toThrow('inner');
      await nested(em, (inner) => inner.query(`INSERT INTO ${table} VALUES (3)`));
    });
    expect(await rows()).toEqual([1, 3]);
    expect(await outsideTransaction()).toBe(true);
  });

  it('an end step rides with COMMIT: its statement and the body commit together; a failing end statement rolls everything back', async () => {
    await wrap({ ...beginWith(`INSERT INTO ${table} VALUES (1)`), end: () => `INSERT INTO ${table} VALUES (3)` }, (em) => em.query(`INSERT INTO ${table} VALUES (2)`));
    expect(await rows()).toEqual([1, 2, 3]);
    expect(await outsideTransaction()).toBe(true);
    // The end statement fails (as the idempotency record does when a live one exists): COMMIT never runs.
    await expect(
      wrap({ ...beginWith(`INSERT INTO ${table} VALUES (4)`), end: () => `INSERT INTO ${table} VALUES (5); SELECT 1/0` }, (em) => em.query(`INSERT INTO ${table} VALUES (6)`)),
    ).rejects.toThrow(/division by zero/);
    expect(await rows()).toEqual([1, 2, 3]);
    expect(await outsideTransaction()).toBe(true);
    // An end step that returns nothing: a plain COMMIT.
    await wrap({ ...beginWith(`INSERT INTO ${table} VALUES (7)`), end: () => undefined }, async () => undefined);
    expect(await rows()).toEqual([1, 2, 3, 7]);
  });

  it('a begin step that declines before its BEGIN: the body never runs, the error reaches the caller, the connection is idle', async () => {
    const declining: TxOptions = {
      begin: async (c) => {
        // An implicit transaction block that fails before its BEGIN: nothing stays open.
        await c.query(`INSERT INTO ${table} VALUES (1); SELECT 1/0; BEGIN`).catch(() => {
          throw new BeginDeclined('lost');
        });
      },
    };
    let ran = false;
    const err = await wrap(declining, async () => void (ran = true)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BeginDeclined);
    expect((err as BeginDeclined<string>).value).toBe('lost');
    expect(ran).toBe(false);
    expect(await rows()).toEqual([]);
    expect(await outsideTransaction()).toBe(true);
  });
});
