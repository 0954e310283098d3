import { Injectable } from '@nestjs/common';
import { v7 as uuidv7 } from 'uuid';
import { TransactionHost, TxHost } from '../../database/transaction';
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
   * Takes the transaction-scoped advisory lock on (scope, key) without waiting (docs/architecture.md §5).
   * A statement of its own: under READ COMMITTED the record must be read by a later statement,
   * whose snapshot is taken after the lock, so it sees a twin's record committed before it.
   * @returns false when another transaction holds the lock (the twin request is in flight).
   */
  async tryLock(scopeHash: string, key: string): Promise<boolean> {
    const rows: Array<{ locked: boolean }> = await this.tx.query('SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0)) AS locked', [
      `${scopeHash}:${key}`,
    ]);
    return rows[0].locked;
  }

  /** The live (unexpired) record of (scope, key), or null. */
  async find(scopeHash: string, key: string): Promise<StoredOutcome | null> {
    const rows: Array<{ fingerprint: string; response_status: number; response_body: string }> = await this.tx.query(
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
    const rows: unknown[] = await this.tx.query(
      `INSERT INTO idempotency_records
         (id, scope_hash, idempotency_key, organization_id, method, path, fingerprint, response_status, response_body, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, now() + make_interval(hours => $10))
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
        ttlHours,
      ],
    );
    if (rows.length !== 1) throw new Error(`idempotency record for key ${record.idempotencyKey} was not written: a live record exists`);
  }

  /** Deletes expired records; returns how many (run by the worker's reaper). */
  async deleteExpired(): Promise<number> {
    const result = await this.tx.getRepository(IdempotencyRecord).createQueryBuilder().delete().where('expires_at <= now()').execute();
    return result.affected ?? 0;
  }
}
