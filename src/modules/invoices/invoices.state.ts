import { AppError } from '../../common/errors/app-error';
import type { InvoiceStatus } from './invoices.entity';

/** Merchant actions on an invoice and the statuses each is allowed from (docs/architecture.md §11). */
export const INVOICE_ACTIONS = {
  edit: ['draft'],
  send: ['draft', 'open'],
  void: ['draft', 'open'],
} as const satisfies Record<string, readonly InvoiceStatus[]>;
export type InvoiceAction = keyof typeof INVOICE_ACTIONS;

/**
 * The status after a merchant action: edit keeps draft, send finalises a draft (→ open) or
 * re-sends an open invoice, void ends it.
 * @throws AppError 409 invalid_request (details.status, details.allowed) when the status forbids the action.
 */
export function invoiceAfter(status: InvoiceStatus, action: InvoiceAction): { next: InvoiceStatus; finalise: boolean } {
  const allowed: readonly InvoiceStatus[] = INVOICE_ACTIONS[action];
  if (!allowed.includes(status)) throw AppError.invalidState('invoice', status, allowed);
  if (action === 'void') return { next: 'void', finalise: false };
  if (action === 'send') return { next: 'open', finalise: status === 'draft' };
  return { next: status, finalise: false };
}

/** Checkout statuses in which the invoice's money is in escrow (void is refused, no new checkout is minted). */
export const FUNDED_CHECKOUT_STATUSES = ['funded', 'accepted', 'delivered', 'disputed'] as const;
/** Checkout statuses after which the invoice is payable again by a new checkout. */
export const REPAYABLE_CHECKOUT_STATUSES = ['refunded', 'cancelled', 'expired'] as const;

/**
 * The invoice's status after one of its checkouts changed (docs/architecture.md §11): `paid` when
 * that checkout reaches `released`; a paid invoice whose paying checkout leaves `released` (a chain
 * reorg) is `open` again; draft and void never change here.
 * @param paidBy the checkout that paid the invoice, if any.
 */
export function invoiceAfterCheckout(status: InvoiceStatus, paidBy: string | null, checkoutId: string, checkoutStatus: string): InvoiceStatus {
  if (status === 'open' && checkoutStatus === 'released') return 'paid';
  if (status === 'paid' && paidBy === checkoutId && checkoutStatus !== 'released') return 'open';
  return status;
}
