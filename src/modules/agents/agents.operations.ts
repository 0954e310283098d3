import type { OperationSpec } from '../../kernel/operation';

/** `get-agent` (GET /agent, svc_agent_get; DESIGN §13): the calling agent. Agent keys; no key. */
export const GET_AGENT: OperationSpec = { name: 'get-agent', scopes: [], kinds: ['agent'], idempotency: 'none' };

/** `get-agent-balance` (GET /balance, svc_get_balance): the signer's and the owner's USDC. Agent keys with agent:balance:read; no key. */
export const GET_AGENT_BALANCE: OperationSpec = { name: 'get-agent-balance', scopes: ['agent:balance:read'], kinds: ['agent'], idempotency: 'none' };
