import { formatAmount } from '@lib/money';
import type { BalanceTransactionDto } from './dto/balance-transaction.dto';
import type { BalanceTransaction } from './balance-transaction.entity';

/** Signed base units → signed decimal text (`-400000n` → `"-0.40"`; DESIGN §6, §21). */
export function formatSignedAmount(units: bigint): string {
  return units < 0n ? `-${formatAmount(-units)}` : formatAmount(units);
}

/** Renders a ledger row as the API shows it (explicit field list; `net` = amount − fee). */
export function toBalanceTransactionDto(b: BalanceTransaction): BalanceTransactionDto {
  return {
    id: b.id,
    type: b.type,
    amount: formatSignedAmount(b.amount),
    fee: formatSignedAmount(b.fee),
    net: formatSignedAmount(b.amount - b.fee),
    currency: 'USDC',
    sourceType: b.sourceType,
    sourceId: b.sourceId,
    txHash: b.txHash,
    logIndex: b.logIndex,
    blockNumber: b.blockNumber,
    blockTimestamp: b.blockTimestamp.toISOString(),
  };
}

/** The CSV columns, in order: the API fields (docs/api.md "Statement export"). */
export const CSV_COLUMNS: ReadonlyArray<keyof BalanceTransactionDto> = [
  'id', 'type', 'amount', 'fee', 'net', 'currency', 'sourceType', 'sourceId', 'txHash', 'logIndex', 'blockNumber', 'blockTimestamp',
];

/** One RFC 4180 field: quoted when it holds a comma, quote, CR or LF, quotes doubled. */
function csvField(v: string | number): string {
  const s = String(v);
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** One RFC 4180 record (CRLF-terminated) of `values`. */
export function csvRecord(values: ReadonlyArray<string | number>): string {
  return `${values.map(csvField).join(',')}\r\n`;
}

/** A row as a CSV record in {@link CSV_COLUMNS} order. */
export function toCsvRecord(b: BalanceTransaction): string {
  const dto = toBalanceTransactionDto(b);
  return csvRecord(CSV_COLUMNS.map((c) => dto[c]));
}
