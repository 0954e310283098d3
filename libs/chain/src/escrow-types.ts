import type { Eip3009Authorization } from './usdc-gateway';

/**
 * Offer the terms signer signs and the buyer funds (CheckoutEscrow v2 FundingTerms, EIP-712,
 * docs/architecture.md §7 and §13). `escrowKey` is the bytes32 escrow id (escrowKeyFromId of the checkout
 * UUID), `buyer` the only address that may fund it, `amount` USDC base units (6 decimals, never a float),
 * `inspectionWindow` seconds after delivery (≤ 365 days), `deadline` the last unix second at which
 * funding is accepted.
 */
export interface FundingTerms {
  escrowKey: string;
  buyer: string;
  seller: string;
  amount: bigint;
  inspectionWindow: bigint | number;
  deadline: bigint | number;
}

/**
 * A signed EIP-3009 ReceiveWithAuthorization moving `value` base units from the buyer `from` to the
 * escrow `to`. `nonce` is the funding-terms digest (CheckoutEscrow binds the authorization to the
 * terms); `v`, `r`, `s` the split `signature` fundWithAuthorization takes.
 */
export interface ReceiveAuthorization extends Eip3009Authorization {
  v: number;
  r: string;
  s: string;
}

/** Escrow states in contract order (CheckoutEscrow.State), lowercase. */
export const ESCROW_STATES = [
  'none',
  'funded',
  'accepted',
  'delivered',
  'released',
  'refunded',
  'cancelled',
  'disputed',
  'voided',
] as const;

/** One of ESCROW_STATES. */
export type EscrowState = (typeof ESCROW_STATES)[number];

/** CheckoutEscrow.getEscrow as read from chain; `amount` base units, times unix seconds (0 = unset). */
export interface OnChainEscrow {
  buyer: string;
  seller: string;
  amount: bigint;
  inspectionWindow: number;
  deliveredAt: number;
  state: EscrowState;
}

/** Contract function a party calls for an escrow action (EscrowGateway.act). */
export type EscrowPartyAction = 'accept' | 'decline' | 'markDelivered' | 'release' | 'cancel' | 'dispute';

/** CheckoutEscrow.Action numbers signed in an EscrowAction (contract v2, docs/architecture.md §13). */
export const ESCROW_ACTION_CODES = {
  accept: 0,
  decline: 1,
  markDelivered: 2,
  release: 3,
  cancel: 4,
  dispute: 5,
} as const satisfies Record<EscrowPartyAction, number>;

/**
 * A party's signed EIP-712 EscrowAction(escrowId, action, actor, nonce, deadline): anyone may submit it
 * through the action's `...BySig` function. `nonce` random bytes32 used once per actor, `deadline` unix
 * seconds (at most one hour ahead of the block that runs it), `signature` 65-byte hex (or ERC-1271 bytes).
 */
export interface SignedEscrowAction {
  escrowKey: string;
  action: EscrowPartyAction;
  actor: string;
  nonce: string;
  deadline: number;
  signature: string;
}

/** Event-derived action name, one per CheckoutEscrow event. */
export type EscrowChainAction =
  | 'funded'
  | 'accepted'
  | 'declined'
  | 'delivered'
  | 'released'
  | 'cancelled'
  | 'disputed'
  | 'resolved';

/** The event each contract call emits (resolve emits 'resolved' whichever way it settles). */
export const ESCROW_ACTION_EVENT = {
  fund: 'funded',
  accept: 'accepted',
  decline: 'declined',
  markDelivered: 'delivered',
  release: 'released',
  cancel: 'cancelled',
  dispute: 'disputed',
  resolve: 'resolved',
} as const satisfies Record<EscrowPartyAction | 'fund' | 'resolve', EscrowChainAction>;

/** Position of a decoded log; (txHash, logIndex) is unique, blockHash detects reorgs (docs/architecture.md §7). */
export interface EscrowEventBase {
  escrowKey: string;
  txHash: string;
  logIndex: number;
  blockNumber: number;
  blockHash: string;
}

/**
 * A decoded CheckoutEscrow event. Addresses checksummed, `amount` base units, `inspectionWindow`
 * seconds, `autoReleaseAt` unix seconds. `by` is the party that acted (contract v2: the signer of a
 * relayed `...BySig` action, not the relayer; for `funded` the buyer); `resolved` is the arbiter's.
 */
export type EscrowChainEvent =
  | (EscrowEventBase & { action: 'funded'; buyer: string; seller: string; amount: bigint; inspectionWindow: number; by: string })
  | (EscrowEventBase & { action: 'accepted'; by: string })
  | (EscrowEventBase & { action: 'declined'; by: string })
  | (EscrowEventBase & { action: 'delivered'; autoReleaseAt: number; by: string })
  | (EscrowEventBase & { action: 'released'; by: string })
  | (EscrowEventBase & { action: 'cancelled'; by: string })
  | (EscrowEventBase & { action: 'disputed'; by: string })
  | (EscrowEventBase & { action: 'resolved'; toSeller: boolean });

/**
 * Result of a successful EscrowGateway.verifyActionTx: `from` is the transaction sender, `by` the party
 * that acted (the event's `by`; the sender for `resolved`), both checksummed.
 */
export interface VerifiedAction {
  event: EscrowChainEvent;
  from: string;
  by: string;
  blockNumber: number;
  blockHash: string;
}
