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

/**
 * Thrown by TxSender.send when its transaction was broadcast (`txHash`) but no successful receipt was
 * seen within the sender's `waitMs` (or the node failed while it waited): the transaction is pending,
 * not failed; it may still be mined (DESIGN §18, §22). Callers answer "pending" with the hash and never
 * re-send on it (a second send is a second transaction). Not a ChainTxError (that one means refused).
 */
export class ChainTxPendingError extends Error {
  override readonly name = 'ChainTxPendingError';

  constructor(
    readonly label: string,
    readonly txHash: string,
    options?: { cause?: unknown },
  ) {
    super(`${label}: broadcast as ${txHash}, not confirmed in time; it may still be mined`, options);
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

/** ethers v6 codes of a node that did not answer, or answered with a failure instead of a result. */
const NODE_ERROR_CODES = new Set(['TIMEOUT', 'NETWORK_ERROR', 'SERVER_ERROR', 'UNKNOWN_ERROR', 'BAD_DATA']);
/** Node socket errors (a refused or reset connection to the RPC endpoint). */
const SOCKET_ERROR_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'UND_ERR_SOCKET', 'UND_ERR_CONNECT_TIMEOUT']);
/** A block the read was pinned to is not (or no longer) on the node's chain: a reorg moved the head back, or a lagging node. */
const BLOCK_OUT_OF_RANGE = /BlockOutOfRange|block out of range|header not found|unknown block|block not found|no latest block/i;

/**
 * True when `err` is a node failure of a chain *read*, not an answer (DESIGN §22 "Reads that fail
 * answer 503"): ethers' TIMEOUT, NETWORK_ERROR, SERVER_ERROR, UNKNOWN_ERROR (any JSON-RPC error of a
 * method ethers does not classify, e.g. eth_getLogs' "BlockOutOfRangeError") or BAD_DATA (except an
 * empty `0x` result: a call to an address without code, which is an answer); a
 * CALL_EXCEPTION without revert data whose node message is not a revert (e.g. "header not found"
 * after a reorg); a socket error; a block the read was pinned to that the node does not have. A
 * ChainTxError or ChainVerificationError is an answer of the chain, never a node failure here.
 */
export function isNodeError(err: unknown): boolean {
  if (err instanceof ChainTxError || err instanceof ChainVerificationError || err instanceof ChainTxPendingError) return false;
  let e = err as Record<string, unknown> | undefined;
  for (let depth = 0; e && typeof e === 'object' && depth < 4; depth++) {
    const code = typeof e.code === 'string' ? e.code : null;
    // An empty result ("0x") is the node's answer that nothing runs at that address, not a failure.
    if (code === 'BAD_DATA' && e.value === '0x') return false;
    if (code && NODE_ERROR_CODES.has(code)) return true;
    if (code && SOCKET_ERROR_CODES.has(code)) return true;
    if (code === 'CALL_EXCEPTION') {
      if (e.data !== null && e.data !== undefined) return false; // revert data: the contract answered
      const info = e.info as { error?: { message?: unknown } } | undefined;
      const nodeMessage = typeof info?.error?.message === 'string' ? info.error.message : '';
      return !/revert/i.test(nodeMessage) && (nodeMessage !== '' || e.reason === null || e.reason === undefined);
    }
    if (code) return false;
    if (typeof e.message === 'string' && BLOCK_OUT_OF_RANGE.test(e.message)) return true;
    e = e.cause as Record<string, unknown> | undefined;
  }
  return false;
}
