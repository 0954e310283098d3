import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';
import { bigintTransformer } from '../../database/bigint.transformer';

import type { EscrowTemplateId } from '../offerings/escrow-templates';
export { ESCROW_TEMPLATES, type EscrowTemplateId } from '../offerings/escrow-templates';

/** Checkout statuses (docs/architecture.md §7). */
export const CHECKOUT_STATUSES = ['open', 'funded', 'accepted', 'delivered', 'released', 'disputed', 'refunded', 'cancelled', 'expired'] as const;
export type CheckoutStatus = (typeof CHECKOUT_STATUSES)[number];

/** A checkout session; `amountUnits` is USDC base units. Settlement is always escrow (docs/api.md 4). */
@Entity('checkout_sessions')
export class CheckoutSession {
  @PrimaryColumn('uuid') id: string;
  @Column('uuid', { name: 'organization_id' }) organizationId: string;
  @Column('numeric', { name: 'amount_units', transformer: bigintTransformer }) amountUnits: bigint;
  @Column() description: string;
  @Column('text') status: CheckoutStatus;
  @Column('text', { name: 'order_id', nullable: true }) orderId: string | null;
  @Column('text', { name: 'shop_domain', nullable: true }) shopDomain: string | null;
  @Column('text', { name: 'redirect_url', nullable: true }) redirectUrl: string | null;
  @Column('text', { name: 'webhook_url', nullable: true }) webhookUrl: string | null;
  @Column('text', { name: 'escrow_template_id' }) escrowTemplateId: EscrowTemplateId;
  @Column('jsonb', { nullable: true }) metadata: Record<string, unknown> | null;
  @Column('uuid', { name: 'escrow_id', nullable: true }) escrowId: string | null;
  @Column('timestamptz', { name: 'expires_at' }) expiresAt: Date;
  /** Which escrow id the checkout offers now: 0 at first, +1 each time a buyer's cancel reopens it (docs/architecture.md §13). */
  @Column('integer', { name: 'escrow_attempt', default: 0 }) escrowAttempt: number;
  /** Fundings a chain reorg took off the chain (each told as checkout.funding_reversed; migrations/1795300081000-ReorgUnwind.ts). */
  @Column('integer', { name: 'funding_reversals', default: 0 }) fundingReversals: number;
  /** The offering sold, with `quantity` (1–100); both null for a free-form checkout (docs/architecture.md §11). */
  @Column('uuid', { name: 'offering_id', nullable: true }) offeringId: string | null;
  @Column('integer', { nullable: true }) quantity: number | null;
  /** The invoice this session pays, minted by the invoice page (docs/architecture.md §11). */
  @Column('uuid', { name: 'invoice_id', nullable: true }) invoiceId: string | null;
  /** Base units of succeeded refunds of this checkout (DESIGN §21; written by the refunds module under this row's lock). */
  @Column('numeric', { name: 'refunded_units', transformer: bigintTransformer, default: 0 }) refundedUnits: bigint;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' }) updatedAt: Date;
}
