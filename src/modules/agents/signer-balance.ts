import type { ChainAccess } from '../../chain/chain-access.service';
import { AUTHORIZATION_CURSOR, type ChainCursors } from '../../chain/chain-cursors.repository';
/** Beyond this many blocks not yet indexed, the exact balance is not attempted (one eth_getLogs range). */
const MAX_UNINDEXED_BLOCKS = 2000;
/** Blocks below the head read again when the cursor's block left the chain (the indexer's own fallback without a `finalized` tag). */
const REORG_REREAD_BLOCKS = 64;

/** A session signer's balance and what the chain already did with its authorizations. */
export interface SignerBalance {
  /** USDC base units held by the signer at the latest block when read (L). */
  onChain: bigint;
  /**
   * Authorization nonces (lowercase bytes32 hex) of the signer used or cancelled on chain in blocks
   * the payment indexer has not applied yet, up to L; their payments may still look open in
   * the database, but `onChain` already reflects them (up to L). Null when not known (no indexer cursor yet,
   * or it lags more than 2,000 blocks).
   */
  settledNonces: string[] | null;
  /**
   * The block up to which the ledger's recorded uses are trusted: the indexer's cursor, or, when the
   * cursor's block is no longer on the chain (a reorg no indexer pass has seen yet), a block below the
   * reorg. A succeeded payment recorded as used above it counts as reserved unless its nonce is in
   * `settledNonces` (DESIGN §22 "Reorgs unwind"). Null before the indexer's first pass.
   */
  trustedBlock: number | null;
}

/**
 * Reads a signer's balance for the spend check (docs/architecture.md §13; docs/decisions.md,
 * "Exact available balance"), with no transaction or pooled connection held across the RPC calls:
 * the latest block L, the USDC balance at L, and the signer's AuthorizationUsed/Canceled logs in
 * (indexer cursor, L] (from below a reorg the indexer has not seen yet when the cursor's block left the chain). Under the agent row lock, `available = onChain − open reservations whose nonce
 * is not in settledNonces` then counts every reservation exactly once: a payment used at or before
 * the cursor is already `succeeded` (the indexer commits its marks with the cursor), one used in
 * (cursor, L] is in `settledNonces`, and one not used by L is not in `onChain` yet. Without
 * `settledNonces` every open reservation is subtracted (conservative: may refuse what fits, never
 * admits what does not).
 * The whole read is one chain read (DESIGN §22): a node error — e.g. eth_getLogs or balanceOf pinned
 * to a head a reorg just took back — is read again once, from a fresh head.
 * @throws ChainUnavailableError (503 `unavailable`, `Retry-After`) when the node fails twice.
 */
export function readSignerBalance(chain: ChainAccess, cursors: ChainCursors, signer: string): Promise<SignerBalance> {
  return chain.read('signer balance', () => readOnce(chain, cursors, signer));
}

async function readOnce(chain: ChainAccess, cursors: ChainCursors, signer: string): Promise<SignerBalance> {
  const mark = await cursors.readMark(AUTHORIZATION_CURSOR);
  const block = await chain.provider.getBlockNumber();
  let base = mark ? mark.blockNumber : null;
  // A reorg below the cursor that no indexer pass has taken back yet: its recorded uses are not trusted.
  if (mark?.blockHash && (await chain.clock.getBlockHash(mark.blockNumber)) !== mark.blockHash) base = Math.max(0, Math.min(mark.blockNumber, block - REORG_REREAD_BLOCKS));
  const exact = base !== null && block - base <= MAX_UNINDEXED_BLOCKS;
  const [onChain, logs] = await Promise.all([
    chain.usdc.balanceOf(signer, block),
    exact && base! < block ? chain.usdc.getAuthorizationLogs(base! + 1, block, signer) : Promise.resolve([]),
  ]);
  return { onChain, settledNonces: exact ? logs.map((l) => l.nonce.toLowerCase()) : null, trustedBlock: base };
}
