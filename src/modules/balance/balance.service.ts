import { Injectable } from '@nestjs/common';
import type { Principal } from '../../kernel/auth/principal';
import { AppError } from '../../common/errors/app-error';
import { ListPage, toPage } from '../../common/http/list.dto';
import type { BalanceTransactionDto } from './dto/balance-transaction.dto';
import type { BalanceTransactionType } from './balance-transaction.entity';
import { BalanceRepository, type LedgerPosition } from './balance.repository';
import { CSV_COLUMNS, csvRecord, toBalanceTransactionDto, toCsvRecord } from './balance.mapper';

/** Rows per keyset read of the export (memory stays one batch, whatever the range). */
export const EXPORT_BATCH = 500;

/** The list query after validation. */
export interface BalanceListQuery {
  limit?: number;
  startingAfter?: string;
  type?: BalanceTransactionType;
  gte?: string;
  lt?: string;
}

/**
 * The organisation's ledger, read side (DESIGN §21; docs/api.md "Balance transactions"): the keyset
 * list and the streamed CSV statement. Rows are written only by {@link BalanceProjector}.
 */
@Injectable()
export class BalanceService {
  constructor(private readonly repo: BalanceRepository) {}

  /**
   * Newest first by (blockTimestamp, blockNumber, logIndex); `limit` 1–100 (default 10).
   * An empty window (`created[gte]` ≥ `created[lt]`) is an empty page.
   * @throws AppError invalid_request for an unknown `starting_after`.
   */
  async list(principal: Principal, q: BalanceListQuery): Promise<ListPage<BalanceTransactionDto>> {
    const limit = q.limit ?? 10;
    const gte = q.gte ? new Date(q.gte) : undefined;
    const lt = q.lt ? new Date(q.lt) : undefined;
    const rows = await this.repo.list(principal.organizationId, limit, q.startingAfter, { type: q.type, gte, lt });
    return toPage(rows, limit, toBalanceTransactionDto);
  }

  /**
   * Checks an export window: `from` < `to` ≤ `from` + 1 year (calendar, UTC).
   * @returns the window as dates.
   * @throws AppError invalid_request (param `to`) when the window is empty or longer than a year.
   */
  exportWindow(fromText: string, toText: string): { from: Date; to: Date } {
    const from = new Date(fromText);
    const to = new Date(toText);
    if (!(from < to)) throw AppError.invalidParam('to', 'must be after from');
    const limit = new Date(from);
    limit.setUTCFullYear(limit.getUTCFullYear() + 1);
    if (to > limit) throw AppError.invalidParam('to', 'must be at most one year after from', { reason: 'range_too_long' });
    return { from, to };
  }

  /**
   * The CSV statement of `[from, to)` (RFC 4180: a header row naming the fields, CRLF records,
   * decimal text, UTC times), oldest first, read in keyset batches of {@link EXPORT_BATCH} rows, so
   * memory holds one batch whatever the range. Call {@link exportWindow} first.
   */
  async *exportCsv(principal: Principal, from: Date, to: Date): AsyncGenerator<string> {
    yield csvRecord(CSV_COLUMNS);
    let after: LedgerPosition | null = null;
    for (;;) {
      const rows = await this.repo.exportBatch(principal.organizationId, from, to, after, EXPORT_BATCH);
      if (rows.length > 0) yield rows.map(toCsvRecord).join('');
      if (rows.length < EXPORT_BATCH) return;
      const last = rows[rows.length - 1];
      after = { blockTimestamp: last.blockTimestamp, blockNumber: last.blockNumber, logIndex: last.logIndex };
    }
  }
}
