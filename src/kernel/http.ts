import { applyDecorators, SetMetadata } from '@nestjs/common';
import { RequireAgentKey, RequireScopes } from './auth/auth.decorators';
import { Idempotent } from './idempotency/idempotent.decorator';
import type { OperationSpec } from './operation';

/** Route metadata: the credential kinds a route admits (read by the auth guard). */
export const CREDENTIAL_KINDS = 'auth:credential-kinds';

/**
 * Marks a REST route as running the declared operation `op` (DESIGN §17, the design card's shape):
 * its access becomes the guard's metadata (scopes; credential kinds), its idempotency mode the
 * interceptor's (`row-owned` and `required` need the key; the key is scoped to the operation, as
 * on MCP and A2A), and the handler returns the operation's work, which the interceptor runs
 * through the one idempotency service. The body DTO is validated by the kernel's pipe.
 */
export const Runs = <I>(op: OperationSpec<I>) => {
  const access =
    op.kinds && op.kinds.length === 1 && op.kinds[0] === 'agent'
      ? RequireAgentKey(...op.scopes)
      : applyDecorators(RequireScopes(...op.scopes), ...(op.kinds ? [SetMetadata(CREDENTIAL_KINDS, op.kinds)] : []));
  if (op.idempotency === 'none') return access;
  return applyDecorators(access, Idempotent({ required: op.idempotency !== 'optional', steps: true, operation: op.name }));
};
