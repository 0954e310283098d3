import type { EscrowChainEvent } from '@lib/chain';
import { WebhookEvent } from '../../common/outbox/webhook-event';
import type { EscrowStatus } from './escrow-actions';

export { ESCROW_ACTIONS, ESCROW_STATUSES, TERMINAL_STATUSES, type EscrowApiAction, type EscrowStatus } from './escrow-actions';

/** The part of an escrow a chain event changes. Times are Dates; null clears. */
export interface EscrowStateSnapshot {
  status: EscrowStatus | null;
  deliveredAt: Date | null;
  autoReleaseAt: Date | null;
}

/** Thrown when a log does not fit the mirrored state (the chain enforces the same rules, so this signals a gap). */
export class EscrowTransitionError extends Error {
  constructor(
    readonly from: EscrowStatus | null,
    readonly action: string,
  ) {
    super(`escrow event ${action} cannot follow status ${from ?? 'none'}`);
  }
}

const FROM: Record<EscrowChainEvent['action'], ReadonlyArray<EscrowStatus | null>> = {
  funded: [null],
  accepted: ['funded'],
  declined: ['funded', 'accepted'],
  delivered: ['accepted'],
  released: ['funded', 'accepted', 'delivered'],
  cancelled: ['funded'],
  disputed: ['accepted', 'delivered'],
  resolved: ['disputed'],
};

/**
 * Applies one CheckoutEscrow event to a snapshot (docs/architecture.md §7 table) and names the webhook event it
 * causes, if any. Pure: the same fold serves the API fast path, the indexer and reorg rebuilds.
 * @throws EscrowTransitionError when the event cannot follow the snapshot's status.
 */
export function applyChainEvent(
  s: EscrowStateSnapshot,
  e: EscrowChainEvent,
  blockTime: Date,
): { next: EscrowStateSnapshot; webhook: WebhookEvent | null } {
  if (!FROM[e.action].includes(s.status)) throw new EscrowTransitionError(s.status, e.action);
  const keep = { deliveredAt: s.deliveredAt, autoReleaseAt: s.autoReleaseAt };
  switch (e.action) {
    case 'funded':
      return { next: { status: 'funded', deliveredAt: null, autoReleaseAt: null }, webhook: WebhookEvent.CheckoutFunded };
    case 'accepted':
      return { next: { status: 'accepted', ...keep }, webhook: WebhookEvent.CheckoutAccepted };
    case 'declined':
      return { next: { status: 'refunded', ...keep, autoReleaseAt: null }, webhook: WebhookEvent.CheckoutRefunded };
    case 'delivered':
      return {
        next: { status: 'delivered', deliveredAt: blockTime, autoReleaseAt: new Date(e.autoReleaseAt * 1000) },
        webhook: null,
      };
    case 'released':
      return { next: { status: 'released', ...keep, autoReleaseAt: null }, webhook: WebhookEvent.CheckoutReleased };
    case 'cancelled':
      return { next: { status: 'cancelled', ...keep }, webhook: WebhookEvent.CheckoutCancelled };
    case 'disputed':
      return { next: { status: 'disputed', ...keep, autoReleaseAt: null }, webhook: WebhookEvent.CheckoutDisputed };
    case 'resolved':
      return e.toSeller
        ? { next: { status: 'released', ...keep, autoReleaseAt: null }, webhook: WebhookEvent.CheckoutReleased }
        : { next: { status: 'refunded', ...keep, autoReleaseAt: null }, webhook: WebhookEvent.CheckoutRefunded };
  }
}


/** The one confirmation rule (DESIGN §18), re-exported where the escrow code has always found it. */
export { lastConfirmedBlock } from '@lib/chain';
