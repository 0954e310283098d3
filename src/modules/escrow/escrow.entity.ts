import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';
import { bigintTransformer } from '../../database/bigint.transformer';
import type { EscrowStatus } from './escrow.state';

/** Why an escrow is held from its checkout (docs/architecture.md §7): its Funded terms differ from the checkout's. */
export type EscrowFlag = 'terms_mismatch';

/** One term of a Funded event that differs from what the checkout and its organisation say; values as decimal text or addresses. */
export interface TermsMismatch {
  field: 'amount' | 'seller' | 'inspectionWindow' | 'escrowAttempt' | 'buyer';
  expected: string;
  actual: string;
}

/**
 * An escrow mirrored from CheckoutEscrow (docs/architecture.md §7). `status`, `deliveredAt` and
 * `autoReleaseAt` are derived from its applied chain events; `amountUnits` is USDC base units.
 * A flagged escrow (`flag` set) never reaches its checkout: no mirrored status, no webhooks.
 */
@Entity('escrows')
export class Escrow {
  @PrimaryColumn('uuid') id: string;
  @Column({ name: 'escrow_key' }) escrowKey: string;
  @Column('uuid', { name: 'checkout_session_id', nullable: true }) checkoutSessionId: string | null;
  @Column('text') status: EscrowStatus;
  @Column({ name: 'buyer_address' }) buyerAddress: string;
  @Column({ name: 'seller_address' }) sellerAddress: string;
  @Column('uuid', { name: 'buyer_organization_id', nullable: true }) buyerOrganizationId: string | null;
  @Column('uuid', { name: 'seller_organization_id', nullable: true }) sellerOrganizationId: string | null;
  @Column('numeric', { name: 'amount_units', transformer: bigintTransformer }) amountUnits: bigint;
  @Column({ name: 'escrow_template_id' }) escrowTemplateId: string;
  @Column('int', { name: 'inspection_window_seconds' }) inspectionWindowSeconds: number;
  @Column('timestamptz', { name: 'delivered_at', nullable: true }) deliveredAt: Date | null;
  @Column('timestamptz', { name: 'auto_release_at', nullable: true }) autoReleaseAt: Date | null;
  @Column('text', { nullable: true }) flag: EscrowFlag | null;
  @Column('jsonb', { name: 'flag_details', nullable: true }) flagDetails: { mismatches: TermsMismatch[] } | null;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' }) updatedAt: Date;
}

/** One applied CheckoutEscrow log; (txHash, logIndex) is unique, so a log is applied once. */
@Entity('escrow_chain_events')
export class EscrowChainEventRow {
  @PrimaryColumn('uuid') id: string;
  @Column('uuid', { name: 'escrow_id' }) escrowId: string;
  @Column() action: string;
  @Column({ name: 'tx_hash' }) txHash: string;
  @Column('int', { name: 'log_index' }) logIndex: number;
  @Column('bigint', { name: 'block_number', transformer: { to: (v: number) => v, from: (v: string) => Number(v) } }) blockNumber: number;
  @Column({ name: 'block_hash' }) blockHash: string;
  @Column('text', { name: 'from_address', nullable: true }) fromAddress: string | null;
  @Column('jsonb') data: Record<string, unknown>;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
}
