// A relative import, not @lib/chain: migrate.ts loads this file from jest's global setup, which
// runs without the @lib path mapping (and the chain barrel would pull in compiled contracts).
import { ANVIL_CHAIN_ID, ANVIL_KEYS, anvilKey } from '../../libs/chain/src/anvil';

/**
 * The secrets a process may hold (docs/architecture.md §10). None of them is ever printed: a
 * refusal names the variable only.
 */
export const SECRET_NAMES = [
  'RELAYER_PRIVATE_KEY',
  'TERMS_SIGNER_PRIVATE_KEY',
  'ARBITER_PRIVATE_KEY',
  'DEPLOYER_PRIVATE_KEY',
  'SIGNER_ENCRYPTION_KEY',
  'OPERATOR_TOKEN',
] as const;
export type SecretName = (typeof SECRET_NAMES)[number];

/** A process and the secrets it loads; every other secret stays out of its memory, even when set. */
export interface ProcessSecrets {
  name: string;
  secrets: readonly SecretName[];
}

/**
 * Which long-running process loads which secret (docs/decisions.md, "Keys per process"):
 * - api: the terms signer (signs funding terms on the pay page and `/funding`), the relayer
 *   (relays gasless funding and actions), the encryption key (seals webhook secrets) and the
 *   operator token (`/metrics`).
 * - worker: the relayer (auto-release, relayed transactions), the terms signer (the payment sweep
 *   relays an agent escrow's funding again with freshly signed FundingTerms, docs/decisions.md "Keys
 *   per process"), the encryption key (opens webhook secrets to sign deliveries, and agent signers)
 *   and the operator token (Bull Board).
 * The arbiter key is loaded by the operator CLI only, for `escrow:resolve`; the CLI loads per
 * command what that command uses (each command's `secrets`, src/cli/commands/).
 */
export const PROCESS_SECRETS = {
  api: ['TERMS_SIGNER_PRIVATE_KEY', 'RELAYER_PRIVATE_KEY', 'SIGNER_ENCRYPTION_KEY', 'OPERATOR_TOKEN'],
  worker: ['TERMS_SIGNER_PRIVATE_KEY', 'RELAYER_PRIVATE_KEY', 'SIGNER_ENCRYPTION_KEY', 'OPERATOR_TOKEN'],
} as const satisfies Record<string, readonly SecretName[]>;

/** Development defaults, used only on the local chain (CHAIN_ID 31337). */
export const DEV_SECRETS: Record<SecretName, string> = {
  RELAYER_PRIVATE_KEY: anvilKey('relayer'),
  TERMS_SIGNER_PRIVATE_KEY: anvilKey('termsSigner'),
  ARBITER_PRIVATE_KEY: anvilKey('arbiter'),
  DEPLOYER_PRIVATE_KEY: anvilKey('deployer'),
  SIGNER_ENCRYPTION_KEY: 'dev-only-signer-encryption-key-change-me',
  OPERATOR_TOKEN: 'dev-operator-token-change-me',
};

/** Values anyone can look up: anvil's published account keys and every development default. */
const KNOWN_VALUES = new Set([...ANVIL_KEYS, ...Object.values(DEV_SECRETS)].map((v) => v.toLowerCase()));

/** True when `value` is publicly known (compared case-insensitively, with or without 0x). */
export function isKnownSecret(value: string): boolean {
  const v = value.trim().toLowerCase();
  return KNOWN_VALUES.has(v) || KNOWN_VALUES.has(`0x${v}`);
}

/** Whether `chainId` is the local development chain, where the defaults apply. */
export function isLocalChain(chainId: number): boolean {
  return chainId === ANVIL_CHAIN_ID;
}
