import { Injectable } from '@nestjs/common';
import { AppError } from '../../common/errors/app-error';
import { TransactionHost, TxHost } from '../../database/transaction';
import { BalanceTransaction, type BalanceTransactionType } from './balance-transaction.entity';

/** The list filters of GET /balance-transactions (block time window `[gte, lt)`). */
export interface BalanceListFilter {
  type?: BalanceTransactionType;
  gte?: Date;
  lt?: Date;
}

/** A position in the ledger's order (block time, block, log). */
export interface LedgerPosition {
  blockTimestamp: Date;
  blockNumber: number;
  logIndex: number;
}

/**
 * All I/O of balance_transactions (the table's one owner). Reads are index-backed keyset scans on
 * (organization_id[, type], block_timestamp, block_number, log_index); every call runs in the
 * caller's transaction when there is one.
 */
@Injectable()
export class BalanceRepository {
  constructor(private readonly txHost: TransactionHost) {}

  private get repo() {
    return (this.txHost as TxHost).tx.getRepository(BalanceTransaction);
  }

  /** Inserts rows whose id is new (`ON CONFLICT DO NOTHING`: a row re-read after a crash or a re-run pass stays one row). @returns how many were new. */
  async insertIfAbsent(rows: BalanceTransaction[]): Promise<number> {
    if (rows.length === 0) return 0;
    const result = await this.repo.createQueryBuilder().insert().into(BalanceTransaction).values(rows as never).orIgnore().execute();
    return (result.raw as unknown[]).length;
  }

  /** Which of `ids` have a row (reconciliation's "a log without its row"). */
  async existingIds(ids: string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = await this.repo.createQueryBuilder('b').select('b.id', 'id').where('b.id IN (:...ids)', { ids }).getRawMany<{ id: string }>();
    return new Set(rows.map((r) => r.id));
  }

  /** Deletes the rows of `ids` (a refund a reorg took back, DESIGN §22), in the caller's transaction. @returns how many. */
  async removeIds(ids: string[]): Promise<number> {
    if (ids.length === 0) return 0;
    const result = await this.repo.createQueryBuilder().delete().where('id IN (:...ids)', { ids }).execute();
    return result.affected ?? 0;
  }

  /** Deletes the rows `cursor`'s indexer wrote from blocks above `block` (its rewind, DESIGN §22). @returns how many. */
  async removeAbove(cursor: string, block: number): Promise<number> {
    const result = await this.repo.createQueryBuilder().delete().where('cursor = :cursor AND block_number > :block', { cursor, block }).execute();
    return result.affected ?? 0;
  }

  /**
   * Newest first, `limit + 1` rows, after the row `startingAfter` (an id of this organisation's).
   * @throws AppError invalid_request (param starting_after) when that id is not a row of this organisation.
   */
  async list(organizationId: string, limit: number, startingAfter: string | undefined, filter: BalanceListFilter): Promise<BalanceTransaction[]> {
    const qb = this.repo.createQueryBuilder('b').where('b.organization_id = :org', { org: organizationId });
    if (startingAfter) {
      const cursor = await this.repo.findOneBy({ id: startingAfter, organizationId });
      if (!cursor) throw AppError.invalidParam('starting_after', 'is not an id from a previous page of this list');
      qb.andWhere('(b.block_timestamp, b.block_number, b.log_index) < (:ts, :bn, :li)', { ts: cursor.blockTimestamp, bn: cursor.blockNumber, li: cursor.logIndex });
    }
    this.applyFilter(qb, filter);
    return qb.orderBy('b.block_timestamp', 'DESC').addOrderBy('b.block_number', 'DESC').addOrderBy('b.log_index', 'DESC').take(limit + 1).getMany();
  }

  /** Oldest first, at most `size` rows of `[from, to)` after position `after` (the export's batched keyset read). */
  exportBatch(organizationId: string, from: Date, to: Date, after: LedgerPosition | null, size: number): Promise<BalanceTransaction[]> {
    const qb = this.repo
      .createQueryBuilder('b')
      .where('b.organization_id = :org', { org: organizationId })
      .andWhere('b.block_timestamp >= :from AND b.block_timestamp < :to', { from, to });
    if (after) qb.andWhere('(b.block_timestamp, b.block_number, b.log_index) > (:ts, :bn, :li)', { ts: after.blockTimestamp, bn: after.blockNumber, li: after.logIndex });
    return qb.orderBy('b.block_timestamp', 'ASC').addOrderBy('b.block_number', 'ASC').addOrderBy('b.log_index', 'ASC').take(size).getMany();
  }

  private applyFilter(qb: ReturnType<BalanceRepository['repo']['createQueryBuilder']>, f: BalanceListFilter): void {
    if (f.type) qb.andWhere('b.type = :type', { type: f.type });
    if (f.gte) qb.andWhere('b.block_timestamp >= :gte', { gte: f.gte });
    if (f.lt) qb.andWhere('b.block_timestamp < :lt', { lt: f.lt });
  }
}
