/**
 * The escrow's statuses and the party actions of the public API with the statuses each is allowed
 * from: the one table the API, the CLI and the console page (bundled into its script) read. Pure
 * data with no imports at run time, so the browser bundle takes it as it is.
 */
import type { EscrowChainEvent } from '@lib/chain';

/** Escrow statuses (docs/architecture.md §7); a checkout's status follows its escrow's once funded. */
export const ESCROW_STATUSES = ['funded', 'accepted', 'delivered', 'released', 'refunded', 'cancelled', 'disputed'] as const;
export type EscrowStatus = (typeof ESCROW_STATUSES)[number];
export const TERMINAL_STATUSES: readonly EscrowStatus[] = ['released', 'refunded', 'cancelled'];

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
