import { escrowKeyFromId } from '@lib/chain';
import type { CheckoutSession } from './checkout.entity';

/**
 * The on-chain escrow id (bytes32 hex) a checkout offers now: its id under its current escrow
 * attempt (docs/architecture.md §13; libs/chain escrow-key). Every caller that signs, acts on or
 * burns a checkout's escrow id takes it from here.
 */
export function checkoutEscrowKey(session: Pick<CheckoutSession, 'id' | 'escrowAttempt'>): string {
  return escrowKeyFromId(session.id, session.escrowAttempt);
}
