/**
 * Compiled artifacts of the Solidity sources in libs/contracts (docs/architecture.md §7), generated at build time by
 * `npm run contracts:build` (scripts/compile-contracts.mjs) into ./generated, which is not committed.
 * Each artifact is `{ contractName, abi, bytecode, deployedBytecode, immutableReferences }`; bytecode is
 * 0x-prefixed hex, immutableReferences are byte ranges `{ start, length }` of the deployed code.
 */
export { CheckoutEscrowArtifact, SOURCES_HASH, TestSmartWalletArtifact, TestUSDCArtifact } from './generated/artifacts';

/** Shape shared by every generated artifact. */
export interface ContractArtifact {
  readonly contractName: string;
  readonly abi: readonly object[];
  readonly bytecode: string;
  readonly deployedBytecode: string;
  readonly immutableReferences: readonly { readonly start: number; readonly length: number }[];
}
