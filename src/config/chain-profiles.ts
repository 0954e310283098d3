/**
 * Chain profiles (DESIGN §18): `CHAIN=anvil|base-sepolia|base` fills CHAIN_ID, USDC_ADDRESS and USDC's
 * EIP-712 domain (USDC_EIP712_NAME, USDC_EIP712_VERSION); a variable set explicitly wins over its profile.
 *
 * Values are Circle's published ones for native USDC (FiatToken v2.2 proxies), cross-checked against the
 * default assets of Coinbase's x402 EVM mechanism (coinbase/x402,
 * typescript/packages/mechanisms/evm/src/shared/defaultAssets.ts; @x402/evm 2.27.0 in our lockfile):
 * - Base mainnet, chain 8453: 0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913, domain ("USD Coin", "2");
 * - Base Sepolia, chain 84532: 0x036CbD53842c5426634e7929541eC2318f3dCF7e, domain ("USDC", "2")
 *   (the testnet token's `name()` is "USDC", so its domain name differs from mainnet's);
 * - anvil, chain 31337: the address the first deployment of `npm run chain:local` gets (TestUSDC,
 *   deployer nonce 0), domain ("USD Coin", "2").
 */
export const CHAIN_PROFILES = {
  anvil: { chainId: 31337, usdcAddress: '0x5FbDB2315678afecb367f032d93F642f64180aa3', usdcDomain: { name: 'USD Coin', version: '2' } },
  'base-sepolia': { chainId: 84532, usdcAddress: '0x036CbD53842c5426634e7929541eC2318f3dCF7e', usdcDomain: { name: 'USDC', version: '2' } },
  base: { chainId: 8453, usdcAddress: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913', usdcDomain: { name: 'USD Coin', version: '2' } },
} as const satisfies Record<string, ChainProfile>;

/** One profile: chain id, checksummed USDC address, and the name/version of USDC's EIP-712 domain. */
export interface ChainProfile {
  chainId: number;
  usdcAddress: string;
  usdcDomain: { name: string; version: string };
}

export type ChainName = keyof typeof CHAIN_PROFILES;
export const CHAIN_NAMES = Object.keys(CHAIN_PROFILES) as ChainName[];

/**
 * Returns `source` with the profile named by `source.CHAIN` filled in under every variable the caller left
 * unset or empty (explicit env wins). An unknown or absent CHAIN returns `source` unchanged (validation
 * reports an unknown name).
 */
export function applyChainProfile(source: Record<string, string | undefined>): Record<string, string | undefined> {
  const name = source.CHAIN;
  if (!name || !Object.hasOwn(CHAIN_PROFILES, name)) return source;
  const p: ChainProfile = CHAIN_PROFILES[name as ChainName];
  const filled: Record<string, string> = {
    CHAIN_ID: String(p.chainId),
    USDC_ADDRESS: p.usdcAddress,
    USDC_EIP712_NAME: p.usdcDomain.name,
    USDC_EIP712_VERSION: p.usdcDomain.version,
  };
  const out = { ...source };
  for (const [k, v] of Object.entries(filled)) if (out[k] === undefined || out[k] === '') out[k] = v;
  return out;
}
