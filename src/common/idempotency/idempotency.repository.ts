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

/** Postgres storage of idempotency records; every call runs in the caller's transaction. */
@Injectable()
export class IdempotencyRepository {
  constructor(private readonly txHost: TransactionHost) {}

  private get tx() {
    return (this.txHost as TxHost).tx;
  }

  /**
   * In one round trip: takes a transaction-scoped advisory lock on (scope, key) without waiting,
   * and reads the live record for it (DESIGN §5).
   * @returns locked false when another transaction holds the lock (the twin request is in flight).
   */
  async lockAndFind(scopeHash: string, key: string): Promise<{ locked: boolean; record: StoredOutcome | null }> {
    const rows: Array<{ locked: boolean; fingerprint: string | null; response_status: number | null; response_body: string | null }> = await this.tx.query(
      `SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0)) AS locked, r.fingerprint, r.response_status, r.response_body
         FROM (SELECT 1) AS one
         LEFT JOIN idempotency_records r ON r.scope_hash = $2 AND r.idempotency_key = $3 AND r.expires_at > now()`,
      [`${scopeHash}:${key}`, scopeHash, key],
    );
    const row = rows[0];
    const record =
      row.fingerprint === null
        ? null
        : { fingerprint: row.fingerprint, responseStatus: row.response_status!, responseBody: JSON.parse(row.response_body!) as unknown };
    return { locked: row.locked, record };
  }

  /**
   * Stores a finished outcome; an expired record under the same key is replaced, a live one is
   * kept (the first outcome wins).
   */
  async insert(record: Omit<IdempotencyRecord, 'id' | 'createdAt' | 'expiresAt'>, ttlHours: number): Promise<void> {
    await this.tx.query(
      `INSERT INTO idempotency_records
         (id, scope_hash, idempotency_key, organization_id, method, path, fingerprint, response_status, response_body, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, now() + make_interval(hours => $10))
       ON CONFLICT (scope_hash, idempotency_key) DO UPDATE SET
         id = EXCLUDED.id, organization_id = EXCLUDED.organization_id, method = EXCLUDED.method, path = EXCLUDED.path,
         fingerprint = EXCLUDED.fingerprint, response_status = EXCLUDED.response_status,
         response_body = EXCLUDED.response_body, created_at = now(), expires_at = EXCLUDED.expires_at
       WHERE idempotency_records.expires_at <= now()`,
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
  }

  /** Deletes expired records; returns how many (run by the worker's reaper). */
  async deleteExpired(): Promise<number> {
    const result = await this.tx.getRepository(IdempotencyRecord).createQueryBuilder().delete().where('expires_at <= now()').execute();
    return result.affected ?? 0;
  }
}
