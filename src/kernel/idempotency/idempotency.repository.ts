import { Injectable } from '@nestjs/common';
import { escapeLiteral } from 'pg';
import { v7 as uuidv7 } from 'uuid';
import { queryRows, type RawConnection, TransactionHost, TxHost } from '../../database/transaction';
import { IdempotencyRecord } from './idempotency-record.entity';

/** A stored outcome: status and the body exactly as first sent. */
export interface StoredOutcome {
  fingerprint: string;
  responseStatus: number;
  responseBody: unknown;
}

/** Postgres storage of idempotency records; every call runs in the caller's transaction, or on its own outside one. */
@Injectable()
export class IdempotencyRepository {
  constructor(private readonly txHost: TransactionHost) {}

  private get tx() {
    return (this.txHost as TxHost).tx;
  }

  /**
   * Opens the transaction and claims (scope, key) in one round trip (docs/architecture.md §5;
   * docs/decisions.md, "Idempotency claim in one round trip"): `BEGIN`, the transaction-scoped
   * advisory lock taken without waiting, a read of the live record ({@link find}) and
   * `SAVEPOINT <savepoint>`, as one simple-protocol message of four statements on `connection`
   * (the `begin` step of {@link TxOptions}). Under READ COMMITTED each statement of the message
   * takes its own snapshot, so the read still sees a twin's record committed before the lock was
   * granted. The values are inlined as SQL literals (pg's escapeLiteral; the scope is hex, the key
   * printable ASCII) because the simple protocol takes no parameters.
   * With `wait` the lock is awaited instead (row-owned reservations: a twin's transaction is short
   * and holds no network call, so waiting for it and then finding its row beats a 409).
   * @returns whether the lock was taken (false: a twin request is in flight) and, if so, the live
   *   record (null when there is none).
   */
  async beginAndClaim(connection: RawConnection, scopeHash: string, key: string, savepoint: string, wait = false): Promise<{ locked: boolean; record: StoredOutcome | null }> {
    if (!/^[a-z_]+$/.test(savepoint)) throw new Error(`beginAndClaim: bad savepoint name ${savepoint}`);
    const lockId = `hashtextextended(${escapeLiteral(`${scopeHash}:${key}`)}, 0)`;
    const results = (await connection.query(
      `BEGIN;
       ${wait ? `SELECT true AS locked FROM pg_advisory_xact_lock(${lockId})` : `SELECT pg_try_advisory_xact_lock(${lockId}) AS locked`};
       SELECT fingerprint, response_status, response_body FROM idempotency_records
        WHERE scope_hash = ${escapeLiteral(scopeHash)} AND idempotency_key = ${escapeLiteral(key)} AND expires_at > now();
       SAVEPOINT ${savepoint}`,
    )) as Array<{ rows: Array<Record<string, unknown>> }>;
    if (!Array.isArray(results) || results.length !== 4) throw new Error('beginAndClaim: expected four statement results');
    const locked = results[1].rows[0]?.locked === true;
    const row = results[2].rows[0] as { fingerprint: string; response_status: number; response_body: string } | undefined;
    return {
      locked,
      record: locked && row ? { fingerprint: row.fingerprint, responseStatus: row.response_status, responseBody: JSON.parse(row.response_body) as unknown } : null,
    };
  }

  /** The live (unexpired) record of (scope, key), or null. */
  async find(scopeHash: string, key: string): Promise<StoredOutcome | null> {
    const rows = await queryRows<{ fingerprint: string; response_status: number; response_body: string }>(
      this.txHost,
      `SELECT fingerprint, response_status, response_body FROM idempotency_records
        WHERE scope_hash = $1 AND idempotency_key = $2 AND expires_at > now()`,
      [scopeHash, key],
    );
    const row = rows[0];
    return row ? { fingerprint: row.fingerprint, responseStatus: row.response_status, responseBody: JSON.parse(row.response_body) as unknown } : null;
  }

  /**
   * Stores a finished outcome; an expired record under the same key is replaced.
   * @throws Error when no row was written (a live record exists): the caller holds the key's lock
   *   and found none, so this is a broken invariant, and the transaction must roll back rather
   *   than commit an effect without its record.
   */
  async insert(record: Omit<IdempotencyRecord, 'id' | 'createdAt' | 'expiresAt'>, ttlHours: number): Promise<void> {
    const rows = await queryRows(
      this.txHost,
      `INSERT INTO idempotency_records
         (id, scope_hash, idempotency_key, organization_id, method, path, fingerprint, response_status, response_body, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, now() + make_interval(secs => $10))
       ON CONFLICT (scope_hash, idempotency_key) DO UPDATE SET
         id = EXCLUDED.id, organization_id = EXCLUDED.organization_id, method = EXCLUDED.method, path = EXCLUDED.path,
         fingerprint = EXCLUDED.fingerprint, response_status = EXCLUDED.response_status,
         response_body = EXCLUDED.response_body, created_at = now(), expires_at = EXCLUDED.expires_at
       WHERE idempotency_records.expires_at <= now()
       RETURNING 1 AS written`,
      [
        uuidv7(),
        record.scopeHash,
        record.idempotencyKey,
        record.organizationId,
        record.method,
        record.path,
        record.fingerprint,
        record.responseStatus,
        JSON.stringify(record.responseBody ?? null),
        ttlHours * 3600,
      ],
    );
    if (rows.length !== 1) throw new Error(`idempotency record for key ${record.idempotencyKey} was not written: a live record exists`);
  }

  /**
   * Stores an in-flight claim (see IdempotencyService, `after` work) living `leaseSeconds`; an
   * expired record or claim under the key is replaced. Call under the key's advisory lock.
   * @throws Error when a live record exists (a broken invariant, as {@link insert}).
   */
  async insertClaim(record: Omit<IdempotencyRecord, 'id' | 'createdAt' | 'expiresAt'>, leaseSeconds: number): Promise<void> {
    await this.insert(record, leaseSeconds / 3600);
  }

  /** Replaces the claim of (scope, key) with its final outcome, living `ttlHours`. */
  async finish(scopeHash: string, key: string, status: number, body: unknown, ttlHours: number): Promise<void> {
    await this.tx.query(
      `UPDATE idempotency_records SET response_status = $3, response_body = $4, expires_at = now() + make_interval(secs => $5)
        WHERE scope_hash = $1 AND idempotency_key = $2`,
      [scopeHash, key, status, JSON.stringify(body ?? null), ttlHours * 3600],
    );
  }

  /** Deletes the in-flight claim of (scope, key), so a retry runs again (the claimed work failed without a storable outcome). */
  async release(scopeHash: string, key: string): Promise<void> {
    await this.tx.query(`DELETE FROM idempotency_records WHERE scope_hash = $1 AND idempotency_key = $2 AND response_status = 102`, [scopeHash, key]);
  }

  /**
   * Deletes up to `limit` expired records, oldest expiry first (an index range scan of
   * `idempotency_records_expires_at_idx`, rows another reaper holds skipped), so one statement's
   * cost does not grow with the backlog (DESIGN §23: passes work in bounded batches).
   * @returns how many were deleted (fewer than `limit`: the backlog is empty).
   */
  async deleteExpiredBatch(limit: number): Promise<number> {
    const rows: unknown[] = await this.tx.query(
      // The ids as an array (an InitPlan), so the DELETE is primary-key look-ups: a join with the
      // batch may be planned as a hash join over a sequential scan of the whole table.
      `DELETE FROM idempotency_records
        WHERE id = ANY(ARRAY(SELECT id FROM idempotency_records WHERE expires_at <= now() ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED))
        RETURNING 1`,
      [limit],
    );
    return flatRows(rows).length;
  }
}

/** TypeORM returns `[rows, count]` for DELETE … RETURNING on pg; plain rows elsewhere. */
function flatRows(rows: unknown[]): unknown[] {
  return rows.length === 2 && Array.isArray(rows[0]) && typeof rows[1] === 'number' ? (rows[0] as unknown[]) : rows;
}
