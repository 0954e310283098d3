import { Column, Entity, PrimaryColumn } from 'typeorm';
import { bigintTransformer } from '../../database/bigint.transformer';

/**
 * The kinds of ledger row and the sign of each (DESIGN §21 "Balance transactions"): money in is
 * positive, money out negative. A new kind (refunds) is one entry here and in the migration's CHECK;
 * {@link balanceTypeOf} refuses any other kind, so nothing is written under a guessed sign.
 */
export const BALANCE_TYPES = {
  escrow_release: { sign: 1n },
  payment: { sign: 1n },
  x402: { sign: 1n },
  refund: { sign: -1n },
} as const;
export type BalanceTransactionType = keyof typeof BALANCE_TYPES;
export const BALANCE_TRANSACTION_TYPES = Object.keys(BALANCE_TYPES) as BalanceTransactionType[];

/** @throws Error for a kind not in {@link BALANCE_TYPES} (a programming error: never a default sign). */
export function balanceTypeOf(type: string): (typeof BALANCE_TYPES)[BalanceTransactionType] {
  const found = (BALANCE_TYPES as Record<string, (typeof BALANCE_TYPES)[BalanceTransactionType]>)[type];
  if (!found) throw new Error(`unknown balance transaction type ${type}`);
  return found;
}

/**
 * One USDC movement the product caused for an organisation (table balance_transactions,
 * migrations/1795300084000-BalanceTransactions.ts; DESIGN §21): written from the chain's USDC
 * `Transfer` log `(txHash, logIndex)` at the confirmation depth by the indexer that owns `cursor`,
 * removed when that cursor rewinds below `blockNumber` (DESIGN §22). `amount` and `fee` are signed
 * USDC base units (`amount` never 0); the id is a UUIDv5 of (txHash, logIndex).
 */
@Entity('balance_transactions')
export class BalanceTransaction {
  @PrimaryColumn('uuid') id: string;
  @Column('uuid', { name: 'organization_id' }) organizationId: string;
  @Column('text') type: BalanceTransactionType;
  @Column('numeric', { precision: 78, scale: 0, transformer: bigintTransformer }) amount: bigint;
  @Column('numeric', { precision: 78, scale: 0, transformer: bigintTransformer }) fee: bigint;
  @Column('text') currency: string;
  @Column('text', { name: 'source_type' }) sourceType: string;
  @Column('uuid', { name: 'source_id' }) sourceId: string;
  @Column('text', { name: 'tx_hash' }) txHash: string;
  @Column('int', { name: 'log_index' }) logIndex: number;
  @Column('bigint', { name: 'block_number', transformer: { to: (v: number) => v, from: (v: string) => Number(v) } }) blockNumber: number;
  @Column('timestamptz', { name: 'block_timestamp' }) blockTimestamp: Date;
  /** The chain cursor (chain_cursors.name) of the indexer that wrote the row. */
  @Column('text') cursor: string;
  @Column('timestamptz', { name: 'created_at', default: () => 'now()' }) createdAt: Date;
}
