import type { OperationSpec } from '../../kernel/operation';

/** `get-me` (GET /me, svc_me): the calling credential, its organisation, scopes and verification. Any valid credential; no key. */
export const GET_ME: OperationSpec = { name: 'get-me', scopes: [], idempotency: 'none' };

/** `get-payout-balance` (GET /payout-balance): the payout address's USDC and ETH, read from the chain. Any valid credential; no key. */
export const GET_PAYOUT_BALANCE: OperationSpec = { name: 'get-payout-balance', scopes: [], idempotency: 'none' };
