import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';
import { bigintTransformer } from '../../database/bigint.transformer';

/** Invoice statuses (docs/architecture.md §11): draft → open → paid; void from draft or open. */
export const INVOICE_STATUSES = ['draft', 'open', 'paid', 'void'] as const;
export type InvoiceStatus = (typeof INVOICE_STATUSES)[number];

/** A stored line: amounts are USDC base units as decimal strings (jsonb cannot hold a bigint). */
export interface StoredLineItem {
  description: string;
  quantity: number;
  unitAmountUnits: string;
  amountUnits: string;
  offeringId: string | null;
}

/** An invoice; `amountUnits` = Σ quantity × unit amount, in USDC base units, frozen at send. */
@Entity('invoices')
export class Invoice {
  @PrimaryColumn('uuid') id: string;
  @Column('uuid', { name: 'organization_id' }) organizationId: string;
  @Column('text', { nullable: true }) number: string | null;
  @Column('text') status: InvoiceStatus;
  @Column('text', { name: 'customer_name' }) customerName: string;
  @Column('text', { name: 'customer_email' }) customerEmail: string;
  @Column('jsonb', { name: 'line_items' }) lineItems: StoredLineItem[];
  @Column('numeric', { name: 'amount_units', transformer: bigintTransformer }) amountUnits: bigint;
  @Column('text') currency: string;
  @Column('timestamptz', { name: 'due_at', nullable: true }) dueAt: Date | null;
  @Column('text', { nullable: true }) memo: string | null;
  @Column('jsonb', { nullable: true }) metadata: Record<string, unknown> | null;
  @Column('uuid', { name: 'checkout_session_id', nullable: true }) checkoutSessionId: string | null;
  @Column('timestamptz', { name: 'sent_at', nullable: true }) sentAt: Date | null;
  @Column('timestamptz', { name: 'paid_at', nullable: true }) paidAt: Date | null;
  @Column('timestamptz', { name: 'voided_at', nullable: true }) voidedAt: Date | null;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' }) updatedAt: Date;
}

export const INVOICE_EMAIL_STATUSES = ['pending', 'sent', 'failed', 'skipped'] as const;
export type InvoiceEmailStatus = (typeof INVOICE_EMAIL_STATUSES)[number];

/** One email of an invoice to its customer, written with the send and delivered by the worker after commit. */
@Entity('invoice_emails')
export class InvoiceEmail {
  @PrimaryColumn('uuid') id: string;
  @Column('uuid', { name: 'invoice_id' }) invoiceId: string;
  @Column('uuid', { name: 'organization_id' }) organizationId: string;
  @Column('text', { name: 'to_email' }) toEmail: string;
  @Column('text') status: InvoiceEmailStatus;
  @Column('integer') attempts: number;
  @Column('timestamptz', { name: 'next_attempt_at', nullable: true }) nextAttemptAt: Date | null;
  @Column('text', { name: 'message_id', nullable: true }) messageId: string | null;
  @Column('text', { name: 'last_error', nullable: true }) lastError: string | null;
  @Column('timestamptz', { name: 'sent_at', nullable: true }) sentAt: Date | null;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' }) updatedAt: Date;
}
