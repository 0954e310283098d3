import type { SecretName } from '../config/secrets';

/**
 * The secrets each operator command loads (docs/architecture.md §10: a process loads only the
 * keys it uses). Commands not listed load none, so creating organisations, keys or clients on a
 * machine that holds no chain keys works.
 */
export const COMMAND_SECRETS: Readonly<Record<string, readonly SecretName[]>> = {
  'escrow:resolve': ['ARBITER_PRIVATE_KEY'],
  'demo:pay': ['TERMS_SIGNER_PRIVATE_KEY', 'RELAYER_PRIVATE_KEY'],
  'demo:sign': ['RELAYER_PRIVATE_KEY'],
  'agent:create': ['SIGNER_ENCRYPTION_KEY'],
  'agent:signer:enable': ['SIGNER_ENCRYPTION_KEY'],
  // Disabling sweeps the float back to the owner: the signer signs, the relayer broadcasts.
  'agent:signer:disable': ['SIGNER_ENCRYPTION_KEY', 'RELAYER_PRIVATE_KEY'],
  'agent:fund': ['SIGNER_ENCRYPTION_KEY', 'RELAYER_PRIVATE_KEY'],
  // The escrow's terms signer and arbiter are the addresses of the configured keys unless given as flags.
  'chain:deploy': ['DEPLOYER_PRIVATE_KEY', 'TERMS_SIGNER_PRIVATE_KEY', 'ARBITER_PRIVATE_KEY'],
};
