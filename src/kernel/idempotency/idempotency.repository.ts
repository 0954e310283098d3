import { Injectable } from '@nestjs/common';
import { escapeLiteral, Query } from 'pg';
import { v7 as uuidv7 } from 'uuid';
import { BeginDeclined, queryRows, type RawConnection, TransactionHost, TxHost } from '../../database/transaction';
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
   * Claims (scope, key) and, only when the claim is won, opens the transaction, in one round trip
   * (docs/architecture.md §5; docs/decisions.md, "Idempotency claim in one round trip" and
   * "Idempotency record and COMMIT in one round trip"): one simple-protocol message on
   * `connection` (the `begin` step of {@link TxOptions}) of
   *   1. the transaction-scoped advisory lock, taken without waiting;
   *   2. a read of the live record ({@link find});
   *   3. a check that fails (division by zero) unless statement 1 took the lock and no live record
   *      exists. The check reads statement 1's answer (a transaction-local setting) and never takes
   *      the lock itself: a statement's snapshot is taken when it starts, so a lock taken inside the
   *      check could be granted after a twin's COMMIT that its snapshot does not show, and the claim
   *      would be won beside a live record (seen in `idempotency-race` as a 500 "record was not
   *      written", the record statement's guard refusing the second execution);
   *   4. `BEGIN` and 5. `SAVEPOINT <savepoint>`.
   * Statements 1–3 run as an implicit transaction block; PostgreSQL folds them into the
   * transaction the `BEGIN` opens, so a won claim keeps its lock until COMMIT. A lost claim fails
   * at 3, which ends the implicit block (the lock is released, the connection is idle): a replay,
   * a 422 or a 409 then costs this single round trip. Under READ COMMITTED each statement takes its
   * own snapshot, so the read still sees a twin's record committed before the lock was granted.
   * The values are inlined as SQL literals (pg's escapeLiteral; the scope is hex, the key printable
   * ASCII) because the simple protocol takes no parameters.
   * With `wait` the lock is awaited instead (row-owned reservations: a twin's transaction is short
   * and holds no network call, so waiting for it and then finding its row beats a 409).
   * @returns when the claim is won (the transaction is open, the savepoint set).
   * @throws BeginDeclined carrying `{ record }` when it is lost: the live record (a finished
   *   outcome, or an in-flight claim), or null when a twin holds the lock; no transaction is open.
   */
  async beginAndClaim(connection: RawConnection, scopeHash: string, key: string, savepoint: string, wait = false): Promise<void> {
    if (!/^[a-z_]+$/.test(savepoint)) throw new Error(`beginAndClaim: bad savepoint name ${savepoint}`);
    const lockId = `hashtextextended(${escapeLiteral(`${scopeHash}:${key}`)}, 0)`;
    const live = `FROM idempotency_records WHERE scope_hash = ${escapeLiteral(scopeHash)} AND idempotency_key = ${escapeLiteral(key)} AND expires_at > now()`;
    const rows: Array<Record<string, unknown>> = [];
    const message = new Query(
      `${wait ? `SELECT set_config('pcp.claim_locked', 'true', true) AS locked FROM pg_advisory_xact_lock(${lockId})` : `SELECT set_config('pcp.claim_locked', pg_try_advisory_xact_lock(${lockId})::text, true) AS locked`};
       SELECT fingerprint, response_status, response_body ${live};
       SELECT 1 / (CASE WHEN current_setting('pcp.claim_locked', true) = 'true' AND NOT EXISTS (SELECT 1 ${live}) THEN 1 ELSE 0 END) AS claimed;
       BEGIN;
       SAVEPOINT ${savepoint}`,
    );
    const done = new Promise<void>((resolve, reject) => {
      message.on('row', (row: Record<string, unknown>) => rows.push(row));
      message.on('end', () => resolve());
      message.on('error', reject);
    });
    connection.query(message);
    try {
      await done;
    } catch (err) {
      // Not won: the check (3) refused, before BEGIN, so no transaction is open.
      if ((err as { code?: string }).code !== '22012') throw err;
      const row = rows.find((r) => 'fingerprint' in r) as { fingerprint: string; response_status: number; response_body: string } | undefined;
      throw new BeginDeclined<{ record: StoredOutcome | null }>({
        record: row ? { fingerprint: row.fingerprint, responseStatus: row.response_status, responseBody: JSON.parse(row.response_body) as unknown } : null,
      });
    }
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
   * The statement that stores a finished outcome (or, living `ttlHours` = lease / 3600, an
   * in-flight claim), to be sent with COMMIT in one message ({@link TxOptions.end}); an expired
   * record or claim under the key is replaced. The values are inlined as SQL literals (the simple
   * protocol takes no parameters). Call under the key's advisory lock.
   * When no row is written (a live record exists: the caller holds the key's lock and found none,
   * so a broken invariant) the statement fails with division by zero (22012, see
   * {@link isRecordNotWritten}), so the COMMIT after it never runs and the effect rolls back with it.
   */
  recordStatement(record: Omit<IdempotencyRecord, 'id' | 'createdAt' | 'expiresAt'>, ttlHours: number): string {
    const values = [
      uuidv7(),
      record.scopeHash,
      record.idempotencyKey,
      record.organizationId,
      record.method,
      record.path,
      record.fingerprint,
    ].map((v) => escapeLiteral(v));
    const status = Number(record.responseStatus);
    const seconds = Number(ttlHours * 3600);
    if (!Number.isInteger(status) || !Number.isFinite(seconds)) throw new Error('recordStatement: bad status or ttl');
    return `WITH written AS (
       INSERT INTO idempotency_records
         (id, scope_hash, idempotency_key, organization_id, method, path, fingerprint, response_status, response_body, expires_at)
       VALUES (${values.join(', ')}, ${status}, ${escapeLiteral(JSON.stringify(record.responseBody ?? null))}, now() + make_interval(secs => ${seconds}))
       ON CONFLICT (scope_hash, idempotency_key) DO UPDATE SET
         id = EXCLUDED.id, organization_id = EXCLUDED.organization_id, method = EXCLUDED.method, path = EXCLUDED.path,
         fingerprint = EXCLUDED.fingerprint, response_status = EXCLUDED.response_status,
         response_body = EXCLUDED.response_body, created_at = now(), expires_at = EXCLUDED.expires_at
       WHERE idempotency_records.expires_at <= now()
       RETURNING 1)
     SELECT 1 / (SELECT count(*)::int FROM written) AS written`;
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
      // The batch's row addresses (ctid) as an array (an InitPlan), so the DELETE is a Tid Scan: no
      // primary-key look-up per row (half the batch's time at 10k and 1M records, docs/operations.md),
      // and no hash join over a sequential scan of the whole table, as a join with the batch may be
      // planned. The rows are locked by the sub-select, so their addresses cannot change before the DELETE.
      `DELETE FROM idempotency_records
        WHERE ctid = ANY(ARRAY(SELECT ctid FROM idempotency_records WHERE expires_at <= now() ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED))
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

/** Whether `err` is {@link IdempotencyRepository.recordStatement}'s refusal to commit without its record. */
export function isRecordNotWritten(err: unknown): boolean {
  return (err as { code?: string } | null)?.code === '22012';
}
