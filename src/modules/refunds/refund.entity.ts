import { Column, Entity, PrimaryColumn } from 'typeorm';
import { bigintTransformer } from '../../database/bigint.transformer';

/** Refund statuses (DESIGN §21): requires_signature → pending → succeeded | failed, or cancelled from requires_signature. */
export const REFUND_STATUSES = ['requires_signature', 'pending', 'succeeded', 'failed', 'cancelled'] as const;
export type RefundStatus = (typeof REFUND_STATUSES)[number];
/** Statuses that count toward the bound (DESIGN §21: a signed authorization can be sent by anyone, so an unsubmitted refund counts). */
export const ACTIVE_REFUND_STATUSES: readonly RefundStatus[] = ['requires_signature', 'pending', 'succeeded'];

/** What a refund gives money back for (DESIGN §21). */
export const REFUND_SOURCE_TYPES = ['checkout_session', 'payment', 'x402_settlement'] as const;
export type RefundSourceType = (typeof REFUND_SOURCE_TYPES)[number];

/** How the money of a refund moves: the relayer sends the seller's signed authorization, or the seller sent a transfer itself. */
export type RefundMethod = 'signature' | 'tx_hash';

const blockNumber = { to: (v: number | null) => v, from: (v: string | null) => (v === null ? null : Number(v)) };

/**
 * A refund (table refunds, migration Refunds; DESIGN §21). `amountUnits` is USDC base units;
 * `fromAddress` / `toAddress` are checksummed; `authNonce` (bytes32 hex, lower case) is derived from
 * the id ({@link refundNonce}); `validBefore` unix seconds (chain time at creation + 24 h);
 * `createdBlock` the chain head at creation (where the watcher starts looking for its logs).
 * `txHash`/`logIndex`/`blockNumber`/`blockHash` name the transfer that moved the money once known.
 */
@Entity('refunds')
export class Refund {
  @PrimaryColumn('uuid') id: string;
  @Column('uuid', { name: 'organization_id' }) organizationId: string;
  @Column('text', { name: 'source_type' }) sourceType: RefundSourceType;
  @Column('uuid', { name: 'source_id' }) sourceId: string;
  @Column('text') status: RefundStatus;
  @Column('numeric', { name: 'amount_units', transformer: bigintTransformer }) amountUnits: bigint;
  @Column('text', { nullable: true }) reason: string | null;
  @Column('jsonb', { nullable: true }) metadata: Record<string, unknown> | null;
  @Column('text', { name: 'from_address' }) fromAddress: string;
  @Column('text', { name: 'to_address' }) toAddress: string;
  @Column('text', { name: 'auth_nonce' }) authNonce: string;
  @Column('bigint', { name: 'valid_before', transformer: blockNumber }) validBefore: number;
  @Column('bigint', { name: 'created_block', transformer: blockNumber }) createdBlock: number;
  @Column('text', { nullable: true }) method: RefundMethod | null;
  @Column('text', { nullable: true }) signature: string | null;
  @Column('text', { name: 'tx_hash', nullable: true }) txHash: string | null;
  @Column('int', { name: 'log_index', nullable: true }) logIndex: number | null;
  @Column('bigint', { name: 'block_number', nullable: true, transformer: blockNumber }) blockNumber: number | null;
  @Column('text', { name: 'block_hash', nullable: true }) blockHash: string | null;
  @Column('timestamptz', { name: 'submitted_at', nullable: true }) submittedAt: Date | null;
  @Column('text', { name: 'failure_reason', nullable: true }) failureReason: string | null;
  @Column('timestamptz', { name: 'created_at' }) createdAt: Date;
  @Column('timestamptz', { name: 'updated_at' }) updatedAt: Date;
}
