import { FetchRequest, JsonRpcProvider, makeError, Network, type TransactionReceipt } from 'ethers';

/** ethers' own default is 300 s per request, long enough to pin callers for minutes on a stalled node. */
export const DEFAULT_RPC_TIMEOUT_MS = 5_000;

/**
 * Optional provider tuning. `pollingIntervalMs` drives `tx.wait()` and event polling (default
 * 1000 ms); `timeoutMs` bounds each JSON-RPC request (default {@link DEFAULT_RPC_TIMEOUT_MS}), after
 * which the call rejects with an ethers `TIMEOUT` error.
 */
export interface CreateProviderOptions {
  pollingIntervalMs?: number;
  timeoutMs?: number;
}

/**
 * JSON-RPC provider pinned to `chainId`: `staticNetwork` so it never probes the node
 * (no "failed to detect network" while anvil starts) and `cacheTimeout: -1` so back-to-back reads such as
 * `eth_getTransactionCount` are never served from ethers' 250 ms cache (nonce reuse on anvil automine).
 * Requests are not batched (`batchMaxCount: 1`), which also removes ethers' 10 ms batch stall per call.
 * Every request times out after `timeoutMs` (docs/architecture.md §5: no caller waits unbounded on a node).
 * Throws TypeError on an empty URL, a non-positive chain id or a non-positive timeout.
 */
export function createProvider(rpcUrl: string, chainId: number, options: CreateProviderOptions = {}): JsonRpcProvider {
  if (!rpcUrl) throw new TypeError('createProvider: rpcUrl is required');
  if (!Number.isSafeInteger(chainId) || chainId <= 0) throw new TypeError(`createProvider: invalid chainId ${chainId}`);
  const timeoutMs = options.timeoutMs ?? DEFAULT_RPC_TIMEOUT_MS;
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs <= 0) throw new TypeError(`createProvider: invalid timeoutMs ${timeoutMs}`);
  const network = Network.from(chainId);
  const request = new FetchRequest(rpcUrl);
  request.timeout = timeoutMs;
  return new ReceiptPollingProvider(request, network, {
    staticNetwork: network,
    cacheTimeout: -1,
    batchMaxCount: 1,
    pollingInterval: options.pollingIntervalMs ?? 1000,
  });
}

/**
 * A JsonRpcProvider whose `waitForTransaction` polls the receipt and the head itself. ethers v6 reads
 * the head, then the receipt, and when the receipt is in a block after that head (the transaction was
 * mined in between) it waits for a "block" event, whose poller takes the block it first sees as its
 * starting point without emitting it: on a chain that mines only on demand (anvil automine) the wait
 * then lasts until some other transaction makes a block, which in a quiet test is never (the
 * intermittent test hangs on `sendUnchecked`, `usdcTransfer` and `broadcastSignedTx`).
 */
class ReceiptPollingProvider extends JsonRpcProvider {
  /**
   * Resolves with the receipt once `head − receipt.block + 1 ≥ confirms` (default 1; 0 = the receipt or
   * null at once), polling every `pollingInterval` ms. Rejects with an ethers TIMEOUT error after
   * `timeout` ms when one is given; without it, waits as long as the caller does (callers in `src/`
   * always pass one, docs/architecture.md §5).
   */
  override async waitForTransaction(hash: string, confirms?: number | null, timeout?: number | null): Promise<TransactionReceipt | null> {
    const need = confirms ?? 1;
    if (need === 0) return this.getTransactionReceipt(hash);
    const deadline = timeout ? Date.now() + timeout : Infinity;
    for (;;) {
      const receipt = await this.getTransactionReceipt(hash);
      if (receipt && (await this.getBlockNumber()) - receipt.blockNumber + 1 >= need) return receipt;
      if (Date.now() >= deadline) throw makeError('timeout', 'TIMEOUT', { operation: 'waitForTransaction', reason: 'timeout' } as never);
      await new Promise((r) => setTimeout(r, Math.max(1, Math.min(this.pollingInterval, deadline - Date.now()))));
    }
  }
}

