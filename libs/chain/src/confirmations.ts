import { ANVIL_CHAIN_ID } from './anvil';

/**
 * The one confirmation rule (DESIGN §18 "Confirmations", docs/architecture.md §7): a log or receipt
 * mined in block `b` counts once `head − confirmations ≥ b`. The API's txHash verification, the escrow
 * indexer, the payment settlement indexer and x402 all decide "confirmed" through these functions,
 * so none of them applies an event another would still call pending.
 */

/** CONFIRMATIONS when unset: 0 on the local chain (anvil, chain id 31337), 2 on any other chain. */
export function defaultConfirmations(chainId: number): number {
  return chainId === ANVIL_CHAIN_ID ? 0 : 2;
}

/**
 * The highest block whose events count as confirmed at `head` (may be negative on a young chain:
 * then nothing is confirmed yet).
 */
export function lastConfirmedBlock(head: number, confirmations: number): number {
  return head - confirmations;
}

/** Whether an event of block `blockNumber` counts at `head` (`head − confirmations ≥ blockNumber`). */
export function isConfirmed(blockNumber: number, head: number, confirmations: number): boolean {
  return lastConfirmedBlock(head, confirmations) >= blockNumber;
}
