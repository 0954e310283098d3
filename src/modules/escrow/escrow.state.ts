import type { EscrowChainEvent } from '@lib/chain';
import { WebhookEvent } from '../../common/outbox/webhook-event';

/** Escrow statuses (docs/architecture.md §7); a checkout's status follows its escrow's once funded. */
export const ESCROW_STATUSES = ['funded', 'accepted', 'delivered', 'released', 'refunded', 'cancelled', 'disputed'] as const;
export type EscrowStatus = (typeof ESCROW_STATUSES)[number];
export const TERMINAL_STATUSES: readonly EscrowStatus[] = ['released', 'refunded', 'cancelled'];

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

/** Party actions of the public API (docs/api.md "Escrow action rules", docs/architecture.md §7 and §5). */
export const ESCROW_ACTIONS = {
  accept: { actors: ['seller'], from: ['funded'], event: 'accepted', idempotencyRequired: false, confirm: false },
  decline: { actors: ['seller'], from: ['funded', 'accepted'], event: 'declined', idempotencyRequired: true, confirm: false },
  'mark-delivered': { actors: ['seller'], from: ['accepted'], event: 'delivered', idempotencyRequired: false, confirm: false },
  release: { actors: ['buyer'], from: ['funded', 'accepted', 'delivered'], event: 'released', idempotencyRequired: true, confirm: true },
  cancel: { actors: ['buyer'], from: ['funded'], event: 'cancelled', idempotencyRequired: true, confirm: false },
  dispute: { actors: ['buyer', 'seller'], from: ['accepted', 'delivered'], event: 'disputed', idempotencyRequired: true, confirm: true },
} as const satisfies Record<
  string,
  { actors: ReadonlyArray<'buyer' | 'seller'>; from: readonly EscrowStatus[]; event: EscrowChainEvent['action']; idempotencyRequired: boolean; confirm: boolean }
>;
export type EscrowApiAction = keyof typeof ESCROW_ACTIONS;

/** The one confirmation rule (DESIGN §18), re-exported where the escrow code has always found it. */
export { lastConfirmedBlock } from '@lib/chain';
