import type { OperationSpec } from '../../kernel/operation';
import { ListQueryDto } from '../../common/http/list.dto';

/** `list-mandates` (GET /mandates, svc_list_mandates; DESIGN §14): the agent's AP2 intent mandates, newest first. Agent keys with agent:mandate; no key. */
export const LIST_MANDATES: OperationSpec<ListQueryDto> = { name: 'list-mandates', scopes: ['agent:mandate'], kinds: ['agent'], input: ListQueryDto, idempotency: 'none' };

/** `get-mandate` (GET /mandates/{id}): one mandate of the agent. Agent keys with agent:mandate; no key. */
export const GET_MANDATE: OperationSpec = { name: 'get-mandate', scopes: ['agent:mandate'], kinds: ['agent'], idempotency: 'none' };
