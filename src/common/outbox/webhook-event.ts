/** Webhook event names, exactly docs/api.md "Events" (WebhookEvent enum). */
export enum WebhookEvent {
  CheckoutFunded = 'checkout.funded',
  CheckoutAccepted = 'checkout.accepted',
  CheckoutReleased = 'checkout.released',
  CheckoutDisputed = 'checkout.disputed',
  CheckoutRefunded = 'checkout.refunded',
  CheckoutCancelled = 'checkout.cancelled',
  /** Legacy name of checkout.released (docs/api.md Versioning 3); always emitted beside it. */
  CheckoutPaid = 'checkout.paid',
  /** Extension (docs/decisions.md "Reorgs unwind"): a chain reorg took the funding off the chain; the checkout is open again. */
  CheckoutFundingReversed = 'checkout.funding_reversed',
  // Refunds (DESIGN §21; documented extensions beside SPEC's list).
  RefundCreated = 'refund.created',
  RefundUpdated = 'refund.updated',
  RefundSucceeded = 'refund.succeeded',
  RefundFailed = 'refund.failed',
}
export const WEBHOOK_EVENTS = Object.values(WebhookEvent);
