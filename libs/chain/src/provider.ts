import { JsonRpcProvider, Network } from 'ethers';

/** Optional provider tuning. `pollingIntervalMs` drives `tx.wait()` and event polling (default 1000 ms). */
export interface CreateProviderOptions {
  pollingIntervalMs?: number;
}

/**
 * JSON-RPC provider pinned to `chainId` (stack-notes §4): `staticNetwork` so it never probes the node
 * (no "failed to detect network" while anvil starts) and `cacheTimeout: -1` so back-to-back reads such as
 * `eth_getTransactionCount` are never served from ethers' 250 ms cache (nonce reuse on anvil automine).
 * Requests are not batched (`batchMaxCount: 1`), which also removes ethers' 10 ms batch stall per call.
 * Throws TypeError on an empty URL or a non-positive chain id.
 */
export function createProvider(rpcUrl: string, chainId: number, options: CreateProviderOptions = {}): JsonRpcProvider {
  if (!rpcUrl) throw new TypeError('createProvider: rpcUrl is required');
  if (!Number.isSafeInteger(chainId) || chainId <= 0) throw new TypeError(`createProvider: invalid chainId ${chainId}`);
  const network = Network.from(chainId);
  return new JsonRpcProvider(rpcUrl, network, {
    staticNetwork: network,
    cacheTimeout: -1,
    batchMaxCount: 1,
    pollingInterval: options.pollingIntervalMs ?? 1000,
  });
}
