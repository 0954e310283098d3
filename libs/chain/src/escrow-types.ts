/**
 * Offer the terms signer signs and the buyer funds (CheckoutEscrow.FundingTerms, EIP-712, DESIGN §7).
 * `escrowKey` is the bytes32 escrow id (escrowKeyFromId of the checkout UUID), `amount` USDC base units
 * (6 decimals, never a float), `inspectionWindow` seconds after delivery (≤ 365 days), `deadline` the
 * last unix second at which funding is accepted.
 */
export interface FundingTerms {
  escrowKey: string;
  seller: string;
  amount: bigint;
  inspectionWindow: bigint | number;
  deadline: bigint | number;
}

/**
 * A signed EIP-3009 ReceiveWithAuthorization moving `value` base units from the buyer `from` to the
 * escrow `to`. `nonce` is the funding-terms digest (CheckoutEscrow binds the authorization to the
 * terms); `validAfter`/`validBefore` unix seconds, exclusive bounds as in EIP-3009.
 */
export interface ReceiveAuthorization {
  from: string;
  to: string;
  value: bigint;
  validAfter: bigint;
  validBefore: bigint;
  nonce: string;
  signature: string;
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

/** Position of a decoded log; (txHash, logIndex) is unique, blockHash detects reorgs (DESIGN §7). */
export interface EscrowEventBase {
  escrowKey: string;
  txHash: string;
  logIndex: number;
  blockNumber: number;
  blockHash: string;
}

/**
 * A decoded CheckoutEscrow event. Addresses checksummed, `amount` base units, `inspectionWindow`
 * seconds, `autoReleaseAt` unix seconds, `by` the caller that released or disputed.
 */
export type EscrowChainEvent =
  | (EscrowEventBase & { action: 'funded'; buyer: string; seller: string; amount: bigint; inspectionWindow: number })
  | (EscrowEventBase & { action: 'accepted' })
  | (EscrowEventBase & { action: 'declined' })
  | (EscrowEventBase & { action: 'delivered'; autoReleaseAt: number })
  | (EscrowEventBase & { action: 'released'; by: string })
  | (EscrowEventBase & { action: 'cancelled' })
  | (EscrowEventBase & { action: 'disputed'; by: string })
  | (EscrowEventBase & { action: 'resolved'; toSeller: boolean });

/** Result of a successful EscrowGateway.verifyActionTx; `from` is the transaction sender (checksummed). */
export interface VerifiedAction {
  event: EscrowChainEvent;
  from: string;
  blockNumber: number;
  blockHash: string;
}
