import { Column, Entity, PrimaryColumn } from 'typeorm';
import { bigintTransformer } from '../../database/bigint.transformer';

/** Settlement statuses (docs/architecture.md §18): `reserved` is the legacy spelling of `pending`. */
export type X402SettlementStatus = 'reserved' | 'pending' | 'settled' | 'failed';

/**
 * A paid retry of one of our own x402 challenges (table x402_settlements, migrations X402 and
 * X402Pending; docs/architecture.md §14, §18): one row per EIP-3009 authorization, UNIQUE(payer,
 * nonce). `payer` and `nonce` are lower case; `amount`, `validAfter` and `validBefore` are base
 * units and unix seconds as bigint (numeric(78,0)); the signed authorization is null on rows
 * reserved before X402Pending. `leaseUntil` is held while one request or sweep advances the row.
 */
@Entity('x402_settlements')
export class X402Settlement {
  @PrimaryColumn('uuid') id: string;
  @Column('text') payer: string;
  @Column('text') nonce: string;
  @Column('text', { name: 'pay_to' }) payTo: string;
  @Column('text', { name: 'payee_handle' }) payeeHandle: string;
  @Column('numeric', { precision: 78, scale: 0, transformer: bigintTransformer }) amount: bigint;
  @Column('text') resource: string;
  @Column('text') status: X402SettlementStatus;
  @Column('text', { name: 'tx_hash', nullable: true }) txHash: string | null;
  /** The block of `txHash` as recorded (migrations/1795300081000-ReorgUnwind.ts): re-derived when a reorg rewinds the cursor below it. */
  @Column('bigint', { name: 'settled_block', nullable: true, transformer: { to: (v: number | null) => v, from: (v: string | null) => (v === null ? null : Number(v)) } })
  settledBlock: number | null;
  @Column('text', { nullable: true }) error: string | null;
  @Column('timestamptz', { name: 'created_at' }) createdAt: Date;
  @Column('timestamptz', { name: 'updated_at' }) updatedAt: Date;
  @Column('numeric', { name: 'valid_after', precision: 78, scale: 0, nullable: true, transformer: bigintTransformer }) validAfter: bigint | null;
  @Column('numeric', { name: 'valid_before', precision: 78, scale: 0, nullable: true, transformer: bigintTransformer }) validBefore: bigint | null;
  @Column('text', { nullable: true }) signature: string | null;
  @Column('timestamptz', { name: 'lease_until', nullable: true }) leaseUntil: Date | null;
  @Column('timestamptz', { name: 'answered_at', nullable: true }) answeredAt: Date | null;
  /** USDC base units refunded by succeeded refunds (DESIGN §21). */
  @Column('numeric', { name: 'refunded_units', precision: 78, scale: 0, default: 0, transformer: bigintTransformer }) refundedUnits?: bigint;
}
