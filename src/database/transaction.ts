import { TransactionHost, type TransactionalAdapter } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import type { Pool, PoolClient, Query } from 'pg';
import type { DataSource, EntityManager, QueryRunner } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';
import type { IsolationLevel } from 'typeorm/driver/types/IsolationLevel';

/**
 * The raw pg connection of a transaction, as a `begin` step sees it (simple protocol: no
 * parameters, several statements). A pg `Query` may be submitted instead of text, to receive the
 * rows of the statements that ran before one that failed (its `row` events).
 */
export interface RawConnection {
  query(sql: string): Promise<unknown>;
  query(query: Query): Query;
}

/**
 * Thrown by a {@link TxOptions.begin} step whose message ended without opening a transaction
 * (its statements ran as an implicit transaction block that failed before its `BEGIN`, so the
 * connection is idle): no ROLLBACK is sent before the connection goes back to the pool, and
 * the error reaches the caller of `withTransaction` as it is. `value` is what the step learned.
 */
export class BeginDeclined<V = unknown> extends Error {
  constructor(readonly value: V) {
    super('the begin step opened no transaction');
  }
}

/**
 * Options of one transaction: TypeORM's isolation level, or `begin`, a first round trip that
 * opens the transaction itself (its SQL starts with `BEGIN;`) and runs its own statements in the
 * same message (docs/decisions.md, "Idempotency claim in one round trip").
 */
export interface TxOptions {
  isolationLevel?: IsolationLevel;
  /**
   * Sends `BEGIN; …` on the transaction's connection before anything else runs. It must begin the
   * transaction in its first statement; if it throws, the transaction is rolled back.
   */
  begin?: (connection: RawConnection) => Promise<void>;
  /**
   * Only with `begin`: called once the body has succeeded; the SQL it returns (simple protocol, no
   * parameters, literals inlined) is sent with `COMMIT` in ONE message, saving the COMMIT round
   * trip (docs/decisions.md, "Idempotency record and COMMIT in one round trip"). Any error of that
   * message rolls the whole transaction back and is thrown; a statement that must hold for the
   * commit to happen fails (raises) instead of returning no rows. Undefined: a plain COMMIT.
   */
  end?: () => string | undefined;
}

/**
 * The @nestjs-cls/transactional adapter for TypeORM (docs/architecture.md §2): the stock
 * TransactionalAdapterTypeOrm (`DataSource.transaction`, nested transactions as savepoints), plus {@link TxOptions.begin},
 * which saves the `START TRANSACTION` round trip on the hot path: the caller's first statements
 * travel with `BEGIN` in one simple-protocol message, then the query runner is marked as inside a
 * transaction so TypeORM commits, rolls back and nests exactly as after `startTransaction`.
 */
export class TypeOrmTxAdapter implements TransactionalAdapter<DataSource, EntityManager, TxOptions> {
  private readonly stock: TransactionalAdapterTypeOrm;

  constructor(readonly connectionToken: unknown) {
    this.stock = new TransactionalAdapterTypeOrm({ dataSourceToken: connectionToken });
  }

  optionsFactory = (dataSource: DataSource) => {
    const stock = this.stock.optionsFactory(dataSource);
    type Stock = typeof stock;
    return {
      ...stock,
      wrapWithTransaction: (options: TxOptions | undefined, fn: (...args: unknown[]) => Promise<unknown>, setClient: (client?: EntityManager) => void) =>
        options?.begin
          ? withOwnBegin(dataSource.createQueryRunner(), { begin: options.begin, end: options.end }, fn, setClient)
          : stock.wrapWithTransaction(options as Parameters<Stock['wrapWithTransaction']>[0], fn, setClient),
      // The stock one, re-typed: its options type requires isolationLevel, ours makes it optional.
      wrapWithNestedTransaction: (options: TxOptions | undefined, fn: (...args: unknown[]) => Promise<unknown>, setClient: (client?: EntityManager) => void, client: EntityManager) =>
        stock.wrapWithNestedTransaction(options as Parameters<Stock['wrapWithNestedTransaction']>[0], fn, setClient, client),
    };
  };
}

async function withOwnBegin(
  runner: QueryRunner,
  { begin, end }: Pick<TxOptions, 'end'> & Required<Pick<TxOptions, 'begin'>>,
  fn: () => Promise<unknown>,
  setClient: (client?: EntityManager) => void,
): Promise<unknown> {
  try {
    const connection = (await runner.connect()) as RawConnection;
    try {
      await begin(connection);
    } catch (err) {
      // A statement after BEGIN failed: the connection holds an aborted transaction; it must not
      // go back to the pool that way (ROLLBACK without a transaction is only a warning). A step
      // that declined before its BEGIN left the connection idle: nothing to send.
      if (!(err instanceof BeginDeclined)) await connection.query('ROLLBACK').catch(() => undefined);
      throw err;
    }
    // What startTransaction would have set (PostgresQueryRunner: depth 0 → START TRANSACTION).
    Object.assign(runner as unknown as { isTransactionActive: boolean; transactionDepth: number }, { isTransactionActive: true, transactionDepth: 1 });
    setClient(runner.manager);
    let result: unknown;
    try {
      result = await fn();
    } catch (err) {
      await runner.rollbackTransaction().catch(() => undefined);
      throw err;
    }
    const last = end?.();
    if (last === undefined) {
      await runner.commitTransaction();
      return result;
    }
    try {
      await connection.query(`${last};\nCOMMIT`);
    } catch (err) {
      // The message stopped at its failing statement (COMMIT not run): the transaction is aborted.
      await runner.rollbackTransaction().catch(() => undefined);
      throw err;
    }
    // What commitTransaction would have reset.
    Object.assign(runner as unknown as { isTransactionActive: boolean; transactionDepth: number }, { isTransactionActive: false, transactionDepth: 0 });
    return result;
  } finally {
    await runner.release();
  }
}

/**
 * The request-scoped transaction shared by repositories, the idempotency interceptor and the
 * outbox writer (docs/architecture.md §2): `txHost.tx` is the current transaction's EntityManager, or the
 * default manager outside one; `txHost.withTransaction(fn)` joins or opens one.
 */
export type TxHost = TransactionHost<TypeOrmTxAdapter>;
export { TransactionHost, Propagation } from '@nestjs-cls/transactional';

/**
 * Runs one parameterised statement through the pg driver itself: on the connection of the
 * transaction `txHost` is in, or on the pool outside one (docs/decisions.md, "The runner's cost").
 * It is `txHost.tx.query(sql, params)` for SELECT and INSERT … RETURNING without TypeORM's query
 * runner around it, whose per-statement query events, logging and result wrapping are measurable
 * on the hot paths (checkout create and read, the idempotency record). A manager bound to a query
 * runner outside a transaction keeps TypeORM's path.
 * @returns the rows of the statement.
 * @throws pg's DatabaseError (`code`, `constraint`, `detail`) instead of TypeORM's QueryFailedError
 *   (whose `driverError` is that same error; the error filter reads both).
 */
export async function queryRows<T>(txHost: TransactionHost, sql: string, params: unknown[]): Promise<T[]> {
  const manager = (txHost as TxHost).tx;
  const runner = manager.queryRunner as (QueryRunner & { databaseConnection?: PoolClient }) | undefined;
  if (runner) {
    if (!runner.isTransactionActive || runner.isReleased || !runner.databaseConnection) return (await manager.query(sql, params)) as T[];
    return (await runner.databaseConnection.query(sql, params)).rows as T[];
  }
  return (await ((manager.connection.driver as PostgresDriver).master as Pool).query(sql, params)).rows as T[];
}
