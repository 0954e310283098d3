import { applyDecorators, SetMetadata } from '@nestjs/common';
import { RequireAgentKey, RequireScopes } from './auth/auth.decorators';
import { Idempotent } from './idempotency/idempotent.decorator';
import type { OperationSpec } from './operation';

/** Route metadata: the credential kinds a route admits (read by the auth guard). */
export const CREDENTIAL_KINDS = 'auth:credential-kinds';

/** Route metadata: the declaration a route runs ({@link Runs}); read at start-up and by tests, never per request. */
export const RUNS_OPERATION = 'kernel:runs-operation';

/**
 * Marks a REST route as running the declared operation `op` (DESIGN §17, the design card's shape):
 * its access becomes the guard's metadata (scopes; credential kinds), its idempotency mode the
 * interceptor's (`row-owned` and `required` need the key; the key is scoped to the operation, as
 * on MCP and A2A), and the handler returns the operation's work, which the interceptor runs
 * through the one idempotency service. The body DTO is validated by the kernel's pipe. `op` itself
 * is kept as the route's {@link RUNS_OPERATION} metadata ({@link routeOperation}).
 */
export const Runs = <I>(op: OperationSpec<I>) => {
  const access =
    op.kinds && op.kinds.length === 1 && op.kinds[0] === 'agent'
      ? RequireAgentKey(...op.scopes)
      : applyDecorators(RequireScopes(...op.scopes), ...(op.kinds ? [SetMetadata(CREDENTIAL_KINDS, op.kinds)] : []));
  const declared = SetMetadata(RUNS_OPERATION, op);
  if (op.idempotency === 'none') return applyDecorators(declared, access);
  return applyDecorators(declared, access, Idempotent({ required: op.idempotency !== 'optional', steps: true, operation: op.name }));
};

/**
 * The declaration a route handler states with {@link Runs} (the same object), or undefined for a
 * route that runs none.
 * @param handler a controller method, e.g. `CheckoutController.prototype.create`.
 */
export function routeOperation(handler: object): OperationSpec<unknown> | undefined {
  return Reflect.getMetadata(RUNS_OPERATION, handler) as OperationSpec<unknown> | undefined;
}
