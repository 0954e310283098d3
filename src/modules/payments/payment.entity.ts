import { Column, Entity, PrimaryColumn } from 'typeorm';
import { bigintTransformer } from '../../database/bigint.transformer';

/** Payment statuses (docs/architecture.md §13). */
export const PAYMENT_STATUSES = ['pending', 'submitted', 'succeeded', 'failed'] as const;
export type PaymentStatus = (typeof PAYMENT_STATUSES)[number];
export type PaymentMode = 'instant' | 'x402' | 'a2a' | 'escrow';

/**
 * An agent's payment and its recovery points (docs/architecture.md §5, §13): created `pending` under
 * the agent row lock; `authNonce`/`authSignature`/`authValidBefore` set once when the signer signs
 * (never re-signed); `relayTxHashes` the first hash of each relay that carried it (the recovery point
 * "broadcast"; a relay's fee-bump replacements are on its relayer row only: ask
 * `RelayerService.signedHashes` for every hash); `txHash` the
 * transaction that used it on chain. Amounts are base units.
 */
@Entity('payments')
export class Payment {
  @PrimaryColumn('uuid') id: string;
  @Column('uuid', { name: 'agent_id' }) agentId: string;
  @Column('uuid', { name: 'organization_id' }) organizationId: string;
  /** Null only for an A2A payment identified by its task alone (the JSON-RPC pay skill). */
  @Column('text', { name: 'idempotency_key', nullable: true }) idempotencyKey: string | null;
  @Column() fingerprint: string;
  @Column('text') status: PaymentStatus;
  @Column('text') mode: PaymentMode;
  @Column({ name: 'to_handle' }) toHandle: string;
  @Column({ name: 'to_address' }) toAddress: string;
  @Column({ name: 'from_address' }) fromAddress: string;
  @Column('numeric', { precision: 78, scale: 0, transformer: bigintTransformer }) amount: bigint;
  @Column('numeric', { precision: 78, scale: 0, transformer: bigintTransformer }) fee: bigint;
  @Column('text', { name: 'auth_nonce', nullable: true }) authNonce: string | null;
  @Column('bigint', { name: 'auth_valid_before', nullable: true, transformer: { to: (v: number | null) => v, from: (v: string | null) => (v === null ? null : Number(v)) } })
  authValidBefore: number | null;
  @Column('text', { name: 'auth_signature', nullable: true }) authSignature: string | null;
  @Column('text', { name: 'relay_tx_hashes', array: true }) relayTxHashes: string[];
  @Column('text', { name: 'tx_hash', nullable: true }) txHash: string | null;
  /** The block of `txHash` as recorded (migrations/1795300081000-ReorgUnwind.ts): re-derived when a reorg rewinds the cursor below it. */
  @Column('bigint', { name: 'used_block', nullable: true, transformer: { to: (v: number | null) => v, from: (v: string | null) => (v === null ? null : Number(v)) } })
  usedBlock: number | null;
  @Column('uuid', { name: 'mandate_id', nullable: true }) mandateId: string | null;
  @Column('text', { name: 'task_id', nullable: true }) taskId: string | null;
  @Column('uuid', { name: 'checkout_session_id', nullable: true }) checkoutSessionId: string | null;
  @Column('text', { name: 'failure_reason', nullable: true }) failureReason: string | null;
  /** Base units of succeeded refunds of this payment by its payee (DESIGN §21; written by the refunds module). */
  @Column('numeric', { name: 'refunded_units', precision: 78, scale: 0, default: 0, transformer: bigintTransformer }) refundedUnits?: bigint;
  @Column('timestamptz', { name: 'created_at' }) createdAt: Date;
  @Column('timestamptz', { name: 'updated_at' }) updatedAt: Date;
}
