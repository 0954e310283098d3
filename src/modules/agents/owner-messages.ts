/** EIP-712 domain name and version of the owner's messages about an agent (docs/architecture.md §13). */
export const OWNER_DOMAIN_NAME = 'Payments Control Plane Agents';
export const OWNER_DOMAIN_VERSION = '1';

/** EnableSigner{agentId, signer, enabled, nonce, deadline}: the owner turns the session signer on or off. */
export const ENABLE_SIGNER_TYPES = {
  EnableSigner: [
    { name: 'agentId', type: 'string' },
    { name: 'signer', type: 'address' },
    { name: 'enabled', type: 'bool' },
    { name: 'nonce', type: 'bytes32' },
    { name: 'deadline', type: 'uint256' },
  ],
};

/** Withdraw{agentId, amount, nonce, deadline}: the owner takes `amount` base units of the float back. */
export const WITHDRAW_TYPES = {
  Withdraw: [
    { name: 'agentId', type: 'string' },
    { name: 'amount', type: 'uint256' },
    { name: 'nonce', type: 'bytes32' },
    { name: 'deadline', type: 'uint256' },
  ],
};

/** RevokeMandate{mandateId, nonce, deadline}: the owner revokes a mandate (docs/architecture.md §14). */
export const REVOKE_MANDATE_TYPES = {
  RevokeMandate: [
    { name: 'mandateId', type: 'string' },
    { name: 'nonce', type: 'bytes32' },
    { name: 'deadline', type: 'uint256' },
  ],
};

/** The owner domain on `chainId` (no verifying contract: the service verifies these signatures). */
export function ownerDomain(chainId: number) {
  return { name: OWNER_DOMAIN_NAME, version: OWNER_DOMAIN_VERSION, chainId };
}
