/** Why a transaction did not prove the claimed escrow action (docs/architecture.md §7 txHash verification). */
export type ChainVerificationReason =
  | 'not_found'
  | 'pending'
  | 'failed'
  | 'wrong_contract'
  | 'wrong_escrow'
  | 'wrong_action'
  | 'wrong_sender';

/**
 * Thrown by EscrowGateway.verifyActionTx. `reason` is machine-readable (the API puts it in
 * `details.reason`; 'pending' maps to 409, the rest to 400 invalid_request, docs/architecture.md §7); `message` is
 * for humans.
 */
export class ChainVerificationError extends Error {
  override readonly name = 'ChainVerificationError';

  constructor(
    readonly reason: ChainVerificationReason,
    message: string,
    readonly txHash: string,
  ) {
    super(message);
  }
}

/**
 * Thrown by the EscrowGateway write helpers when a transaction would revert (gas estimation) or did
 * revert (mined with status 0). `errorName`/`errorArgs` are the decoded custom error of the escrow or the
 * token (e.g. 'NotSeller', 'InvalidState' [current]), null when the revert data is unknown;
 * `txHash` is set only when the transaction was mined.
 */
export class ChainTxError extends Error {
  override readonly name = 'ChainTxError';

  constructor(
    message: string,
    readonly errorName: string | null,
    readonly errorArgs: readonly unknown[],
    readonly revertData: string | null,
    readonly txHash: string | null,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
