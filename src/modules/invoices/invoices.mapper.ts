import { formatAmount } from '@lib/money';
import { InvoiceDto, InvoiceEmailDto } from './dto/invoice.dto';
import { Invoice, InvoiceEmail } from './invoices.entity';

/** `reason` of an email that was not sent because the process has no SMTP_URL. */
export const SMTP_NOT_CONFIGURED = 'smtp_not_configured';

export function toInvoiceEmailDto(e: InvoiceEmail): InvoiceEmailDto {
  return {
    status: e.status,
    to: e.toEmail,
    reason: e.status === 'skipped' ? SMTP_NOT_CONFIGURED : null,
    attempts: e.attempts,
    lastError: e.lastError,
    sentAt: e.sentAt?.toISOString() ?? null,
    createdAt: e.createdAt.toISOString(),
  };
}

/**
 * Renders an invoice as the API shows it (explicit field list, docs/architecture.md, Conventions 5). `payUrl` =
 * `{checkout_host}/invoices/{id}` once sent (docs/architecture.md §11).
 */
export function toInvoiceDto(i: Invoice, email: InvoiceEmail | null | undefined, checkoutBaseUrl: string): InvoiceDto {
  return {
    id: i.id,
    number: i.number,
    status: i.status,
    customer: { name: i.customerName, email: i.customerEmail },
    lineItems: i.lineItems.map((l) => ({
      description: l.description,
      quantity: l.quantity,
      unitAmount: formatAmount(BigInt(l.unitAmountUnits)),
      amount: formatAmount(BigInt(l.amountUnits)),
      offeringId: l.offeringId,
    })),
    amount: formatAmount(i.amountUnits),
    currency: 'USDC',
    dueAt: i.dueAt?.toISOString() ?? null,
    memo: i.memo,
    payUrl: i.status === 'draft' ? null : `${checkoutBaseUrl.replace(/\/$/, '')}/invoices/${i.id}`,
    checkoutSessionId: i.checkoutSessionId,
    sentAt: i.sentAt?.toISOString() ?? null,
    paidAt: i.paidAt?.toISOString() ?? null,
    voidedAt: i.voidedAt?.toISOString() ?? null,
    email: email ? toInvoiceEmailDto(email) : null,
    metadata: i.metadata,
    createdAt: i.createdAt.toISOString(),
    updatedAt: i.updatedAt.toISOString(),
  };
}
