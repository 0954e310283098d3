/** Webhook event names, exactly SPEC "Events" (WebhookEvent enum). */
export enum WebhookEvent {
  CheckoutFunded = 'checkout.funded',
  CheckoutAccepted = 'checkout.accepted',
  CheckoutReleased = 'checkout.released',
  CheckoutDisputed = 'checkout.disputed',
  CheckoutRefunded = 'checkout.refunded',
  CheckoutCancelled = 'checkout.cancelled',
  /** Legacy name of checkout.released (SPEC Versioning 3); always emitted beside it. */
  CheckoutPaid = 'checkout.paid',
}
export const WEBHOOK_EVENTS = Object.values(WebhookEvent);
