import { Injectable } from '@nestjs/common';
import { readTokenTransfers } from '@lib/chain';
import { ChainAccess } from '../../chain/chain-access.service';
import { AppConfig } from '../../config/app-config';
import { BalanceProjector } from './balance-projector.service';
import type { BalanceTransaction } from './balance-transaction.entity';
import { formatSignedAmount } from './balance.mapper';
import { BalanceRepository, type LedgerPosition } from './balance.repository';

/** Rows per keyset read of a reconciliation (bounded memory whatever the range). */
const BATCH = 500;

/**
 * One disagreement between the ledger and the chain: `row_without_log`, a row the chain does not
 * bear out; `log_without_row`, a USDC Transfer of one of the product's movements (a writer's rule
 * run again on the chain) that has no row.
 */
export interface BalanceMismatch {
  kind: 'row_without_log' | 'log_without_row';
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
 * |amount|, and the ledger's signed sum must equal the chain's sum of those logs. The other way
 * round, every USDC Transfer of the product's movements for the organisation in the window's
 * confirmed blocks (each writer's rule run again on the chain: escrow releases to the seller, relayed
 * payments and x402 settlements to the organisation, refunds; {@link BalanceProjector.sources}) must
 * have its row; one without is `log_without_row` and counts in the chain's sum. Reads in keyset
 * batches, no transaction held across the node reads; reports, never repairs (DESIGN §18).
 */
@Injectable()
export class BalanceReconciler {
  constructor(
    private readonly repo: BalanceRepository,
    private readonly chain: ChainAccess,
    private readonly projector: BalanceProjector,
    private readonly config: AppConfig,
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
              kind: 'row_without_log',
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
    for (const missing of await this.logsWithoutRows(organizationId, from, to)) {
      chain += missing.amount;
      mismatches.push({
        kind: 'log_without_row',
        id: missing.id,
        txHash: missing.txHash,
        logIndex: missing.logIndex,
        expected: `a ${missing.type} row of ${formatSignedAmount(missing.amount)} (${missing.sourceType} ${missing.sourceId}) for the USDC Transfer at block ${missing.blockNumber}`,
        actual: 'no balance transaction row',
      });
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

  /**
   * The rows the writers' rules give for `organizationId` from the chain's confirmed blocks of
   * `[from, to)` that the ledger lacks (ids derived from (txHash, logIndex), as the writers' own).
   */
  private async logsWithoutRows(organizationId: string, from: Date, to: Date): Promise<BalanceTransaction[]> {
    const range = await this.blockRange(from, to);
    if (!range) return [];
    const missing: BalanceTransaction[] = [];
    const seen = new Set<string>();
    for (const source of this.projector.sources().values()) {
      const movements = await source(organizationId, range.fromBlock, range.toBlock);
      const expected = (await this.projector.resolve(movements)).filter((r) => r.blockTimestamp >= from && r.blockTimestamp < to && !seen.has(r.id));
      for (const r of expected) seen.add(r.id);
      const present = await this.repo.existingIds(expected.map((r) => r.id));
      missing.push(...expected.filter((r) => !present.has(r.id)));
    }
    return missing;
  }

  /**
   * The confirmed blocks (head − CONFIRMATIONS at most) whose time lies in `[from, to)`, found by
   * binary search on block timestamps (about 2·log2(head) block reads); null when there are none.
   */
  private async blockRange(from: Date, to: Date): Promise<{ fromBlock: number; toBlock: number } | null> {
    const provider = this.chain.provider;
    const confirmed = (await provider.getBlockNumber()) - this.config.env.CONFIRMATIONS;
    if (confirmed < 0) return null;
    const timeOf = async (n: number) => (await provider.getBlock(n))!.timestamp * 1000;
    /** The first block in [0, confirmed + 1) whose time is at or after `t` (confirmed + 1 when none). */
    const firstAtOrAfter = async (t: number) => {
      let lo = 0;
      let hi = confirmed + 1;
      while (lo < hi) {
        const mid = Math.floor((lo + hi) / 2);
        if ((await timeOf(mid)) >= t) hi = mid;
        else lo = mid + 1;
      }
      return lo;
    };
    const fromBlock = await firstAtOrAfter(from.getTime());
    const toBlock = (await firstAtOrAfter(to.getTime())) - 1;
    return fromBlock <= toBlock ? { fromBlock, toBlock } : null;
  }
}

function groupByTx(rows: BalanceTransaction[]): Map<string, BalanceTransaction[]> {
  const out = new Map<string, BalanceTransaction[]>();
  for (const r of rows) out.set(r.txHash, [...(out.get(r.txHash) ?? []), r]);
  return out;
}
