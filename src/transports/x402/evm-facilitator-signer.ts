import { isNodeError } from '@lib/chain';
import { Contract, type InterfaceAbi, type JsonRpcProvider, verifyTypedData } from 'ethers';

/** The read side of `@x402/evm`'s FacilitatorEvmSigner (its `verify` uses only these). */
export interface X402VerifySigner {
  getAddresses(): readonly `0x${string}`[];
  readContract(args: { address: `0x${string}`; abi: readonly unknown[]; functionName: string; args?: readonly unknown[] }): Promise<unknown>;
  verifyTypedData(args: {
    address: `0x${string}`;
    domain: Record<string, unknown>;
    types: Record<string, unknown>;
    primaryType: string;
    message: Record<string, unknown>;
    signature: `0x${string}`;
  }): Promise<boolean>;
  writeContract(args: unknown): Promise<`0x${string}`>;
  sendTransaction(args: unknown): Promise<`0x${string}`>;
  waitForTransactionReceipt(args: unknown): Promise<{ status: string }>;
  getCode(args: { address: `0x${string}` }): Promise<`0x${string}` | undefined>;
}

/**
 * `@x402/evm`'s facilitator signer over our ethers provider, for verification only
 * (docs/architecture.md §14): the exact scheme's `verify` reads the token (balance, authorization
 * state) and checks the EIP-712 signature through it. Settlement never goes through it — our relayer
 * queue sends the transaction — so the write methods throw. `onNodeError` hears every read the node
 * failed (DESIGN §22): the library turns a failed read into "invalid", which is no verdict.
 */
export function ethersVerifySigner(provider: JsonRpcProvider, address: string, onNodeError: (err: unknown) => void = () => {}): X402VerifySigner {
  const heard = (err: unknown): never => {
    if (isNodeError(err)) onNodeError(err);
    throw err;
  };
  const refuse = () => Promise.reject(new Error('x402 settlement goes through the relayer queue, not the facilitator signer'));
  return {
    getAddresses: () => [address as `0x${string}`],
    readContract: ({ address: to, abi, functionName, args }) =>
      new Contract(to, abi as InterfaceAbi, provider).getFunction(functionName).staticCall(...(args ?? [])).catch(heard),
    verifyTypedData: async ({ address: expected, domain, types, primaryType, message, signature }) => {
      const structs = Object.fromEntries(Object.entries(types).filter(([k]) => k !== 'EIP712Domain')) as Record<string, Array<{ name: string; type: string }>>;
      if (!structs[primaryType]) return false;
      try {
        return verifyTypedData(domain, structs, message, signature).toLowerCase() === expected.toLowerCase();
      } catch {
        return false;
      }
    },
    writeContract: refuse,
    sendTransaction: refuse,
    waitForTransactionReceipt: refuse,
    getCode: async ({ address: at }) => {
      const code = await provider.getCode(at).catch(heard);
      return code === '0x' ? undefined : (code as `0x${string}`);
    },
  };
}
