import { FetchRequest, JsonRpcProvider, Network } from 'ethers';

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
  return new JsonRpcProvider(request, network, {
    staticNetwork: network,
    cacheTimeout: -1,
    batchMaxCount: 1,
    pollingInterval: options.pollingIntervalMs ?? 1000,
  });
}

