import { Injectable } from '@nestjs/common';
import { readTokenTransfers } from '@lib/chain';
import { ChainAccess } from '../../chain/chain-access.service';
import type { BalanceTransaction } from './balance-transaction.entity';
import { formatSignedAmount } from './balance.mapper';
import { BalanceRepository, type LedgerPosition } from './balance.repository';

/** Rows per keyset read of a reconciliation (bounded memory whatever the range). */
const BATCH = 500;

/** One ledger row the chain does not bear out. */
export interface BalanceMismatch {
  id: string;
  txHash: string;
  logIndex: number;
  expected: string;
  actual: string;
}

/** What {@link BalanceReconciler.check} found; sums are signed decimal USDC text. */
export interface BalanceReconcileReport {
  organizationId: string;
  from: string;
  to: string;
  rows: number;
  ledger: string;
  chain: string;
  clean: boolean;
  mismatches: BalanceMismatch[];
}

/**
 * Reconciles an organisation's ledger over a window with the chain (DESIGN §21 "reconciliation
 * checks an organisation's sum against the chain's Transfer logs"): every row of `[from, to)` must
 * be a USDC `Transfer` log on the canonical chain at its (txHash, logIndex) and block, of exactly
 * |amount|, and the ledger's signed sum must equal the chain's sum of those logs. Reads in keyset
 * batches, no transaction held across the node reads; reports, never repairs (DESIGN §18).
 */
@Injectable()
export class BalanceReconciler {
  constructor(
    private readonly repo: BalanceRepository,
    private readonly chain: ChainAccess,
  ) {}

  /** @throws the provider's error when the node does not answer. */
  async check(organizationId: string, from: Date, to: Date): Promise<BalanceReconcileReport> {
    let after: LedgerPosition | null = null;
    let rows = 0;
    let ledger = 0n;
    let chain = 0n;
    const mismatches: BalanceMismatch[] = [];
    for (;;) {
      const batch = await this.repo.exportBatch(organizationId, from, to, after, BATCH);
      for (const [txHash, txRows] of groupByTx(batch)) {
        const mined = await readTokenTransfers(this.chain.provider, this.chain.usdc.address, txHash).catch(() => null);
        for (const row of txRows) {
          rows++;
          ledger += row.amount;
          const log = mined && mined.blockNumber === row.blockNumber ? mined.transfers.find((t) => t.logIndex === row.logIndex) : undefined;
          if (log) chain += row.amount < 0n ? -log.value : log.value;
          const magnitude = row.amount < 0n ? -row.amount : row.amount;
          if (!log || log.value !== magnitude) {
            mismatches.push({
              id: row.id,
              txHash: row.txHash,
              logIndex: row.logIndex,
              expected: `a USDC Transfer of ${formatSignedAmount(magnitude)} at block ${row.blockNumber}`,
              actual: log ? `a Transfer of ${formatSignedAmount(log.value)}` : 'no such Transfer log on the canonical chain',
            });
          }
        }
      }
      if (batch.length < BATCH) break;
      const last = batch[batch.length - 1];
      after = { blockTimestamp: last.blockTimestamp, blockNumber: last.blockNumber, logIndex: last.logIndex };
    }
    return {
      organizationId,
      from: from.toISOString(),
      to: to.toISOString(),
      rows,
      ledger: formatSignedAmount(ledger),
      chain: formatSignedAmount(chain),
      clean: mismatches.length === 0 && ledger === chain,
      mismatches,
    };
  }
}

function groupByTx(rows: BalanceTransaction[]): Map<string, BalanceTransaction[]> {
  const out = new Map<string, BalanceTransaction[]>();
  for (const r of rows) out.set(r.txHash, [...(out.get(r.txHash) ?? []), r]);
  return out;
}
