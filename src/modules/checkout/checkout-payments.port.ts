/**
 * Port through which checkout reads the agent payment behind a checkout (an agent escrow's checkout
 * is created for one escrow-mode payment, DESIGN §13, §18). The `payments` table is the payments
 * module's, which depends on agents and mandates (and agent escrows on checkout), so checkout names
 * the port and the payments module implements it (issue 31; the same pattern as orgs'
 * VerificationSnapshotSource). In the caller's transaction, if any.
 */
export abstract class CheckoutPaymentsSource {
  /** The payer (the agent's session signer) of the first escrow-mode payment attached to checkout `checkoutId`, or null. */
  abstract escrowPayer(checkoutId: string): Promise<string | null>;
  /** Whether any payment is attached to checkout `checkoutId`. */
  abstract hasPayment(checkoutId: string): Promise<boolean>;
}
