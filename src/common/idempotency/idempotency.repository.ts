import { Injectable } from '@nestjs/common';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import { v7 as uuidv7 } from 'uuid';
import { TransactionHost, TxHost } from '../../database/transaction';
import { IdempotencyRecord } from './idempotency-record.entity';

/** Postgres storage of idempotency records; every call runs in the caller's transaction. */
@Injectable()
export class IdempotencyRepository {
  constructor(private readonly txHost: TransactionHost) {}

  private get tx() {
    return (this.txHost as TxHost).tx;
  }

  /**
   * Takes a transaction-scoped advisory lock on (scope, key) without waiting.
   * @returns false when another transaction holds it (the twin request is in flight).
   */
  async tryLock(scopeHash: string, key: string): Promise<boolean> {
    const rows: Array<{ locked: boolean }> = await this.tx.query(
      'SELECT pg_try_advisory_xact_lock(hashtextextended($1, 0)) AS locked',
      [`${scopeHash}:${key}`],
    );
    return rows[0].locked;
  }

  /** The live record for (scope, key); an expired one is deleted first so the key runs anew. */
  async findLive(scopeHash: string, key: string): Promise<IdempotencyRecord | null> {
    await this.tx.query('DELETE FROM idempotency_records WHERE scope_hash = $1 AND idempotency_key = $2 AND expires_at <= now()', [
      scopeHash,
      key,
    ]);
    return this.tx.getRepository(IdempotencyRecord).findOneBy({ scopeHash, idempotencyKey: key });
  }

  async insert(record: Omit<IdempotencyRecord, 'id' | 'createdAt' | 'expiresAt'>, ttlHours: number): Promise<void> {
    const row = { ...record, id: uuidv7(), expiresAt: new Date(Date.now() + ttlHours * 3600_000) };
    await this.tx.getRepository(IdempotencyRecord).insert(row as QueryDeepPartialEntity<IdempotencyRecord>);
  }

  /** Deletes expired records; returns how many (run by the worker's reaper). */
  async deleteExpired(): Promise<number> {
    const result = await this.tx.getRepository(IdempotencyRecord).createQueryBuilder().delete().where('expires_at <= now()').execute();
    return result.affected ?? 0;
  }
}
