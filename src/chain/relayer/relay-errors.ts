import type { ChainTxError } from '@lib/chain';

/**
 * Whether a failed call was judged by the chain (it reverts: revert data, or the node says
 * "execution reverted") rather than left unjudged by a node error (timeout, "header not found", -32603, a rate
 * limit). DESIGN §22 "Dead only when proven"; issue 29 finding 3.
 */
export function judgedByChain(e: ChainTxError): boolean {
  return e.revertData !== null || /execution reverted/i.test(e.message);
}
