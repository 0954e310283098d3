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

/** Why USDC itself refused a transfer (FiatToken v2.2, DESIGN §18): a global pause, or a blacklisted party. */
export type TokenRefusal = 'paused' | 'blacklisted';

/** FiatToken v2.2's revert reasons (require strings), which TestUSDC reproduces. */
const TOKEN_REFUSALS: ReadonlyArray<[string, TokenRefusal]> = [
  ['Pausable: paused', 'paused'],
  ['Blacklistable: account is blacklisted', 'blacklisted'],
];

/**
 * Classifies a ChainTxError (estimate, eth_call or mined revert) as USDC's own refusal: `paused` while the
 * issuer has paused the token, `blacklisted` when a party of the transfer is listed; null for anything else
 * (including non-ChainTxError values). Reads the decoded `Error(string)` reason, else the message.
 */
export function tokenRefusal(err: unknown): TokenRefusal | null {
  if (!(err instanceof ChainTxError)) return null;
  const reason = err.errorName === 'Error' && typeof err.errorArgs[0] === 'string' ? err.errorArgs[0] : err.message;
  for (const [text, kind] of TOKEN_REFUSALS) if (reason.includes(text)) return kind;
  return null;
}
