import { applyDecorators, SetMetadata } from '@nestjs/common';
import { ConsoleSessionRoute, RequireAgentKey, RequireConsole, RequireScopes } from './auth/auth.decorators';
import { Idempotent } from './idempotency/idempotent.decorator';
import type { AnyIdempotentWork } from './idempotency/idempotency.service';
import { runUnkeyed } from './idempotency/idempotent-work';
import type { Access, OperationSpec } from './operation';

/** Route metadata: the credential kinds a route admits (read by the auth guard). */
export const CREDENTIAL_KINDS = 'auth:credential-kinds';

/** Route metadata: the declaration a route runs ({@link Runs}); read at start-up and by tests, never per request. */
export const RUNS_OPERATION = 'kernel:runs-operation';

/**
 * Marks a REST route as running the declared operation `op` (DESIGN §17, the design card's shape):
 * its access becomes the guard's metadata (scopes; credential kinds), its idempotency mode the
 * interceptor's (`row-owned` and `required` need the key; the key is scoped to the operation, as
 * on MCP and A2A), and the handler returns the operation's work, which the interceptor runs
 * through the one idempotency service (a route of mode `none` runs the work itself, {@link runWork}).
 * A console-only operation (`kinds: ['console']`) gets the console guard's metadata. The body DTO is validated by the kernel's pipe. `op` itself
 * is kept as the route's {@link RUNS_OPERATION} metadata ({@link routeOperation}).
 */
export const Runs = <I>(op: OperationSpec<I>) => {
  const only = op.kinds && op.kinds.length === 1 ? op.kinds[0] : undefined;
  const access =
    only === 'agent'
      ? RequireAgentKey(...op.scopes)
      : only === 'console'
        ? consoleAccess(op)
        : applyDecorators(RequireScopes(...op.scopes), ...(op.kinds ? [SetMetadata(CREDENTIAL_KINDS, op.kinds)] : []));
  const declared = SetMetadata(RUNS_OPERATION, op);
  if (op.idempotency === 'none') return applyDecorators(declared, access);
  return applyDecorators(declared, access, Idempotent({ required: op.idempotency !== 'optional', operation: op.name }));
};

/** The guard's metadata for a console-only operation (`kinds: ['console']`), by whom its session acts for (DESIGN §19). */
function consoleAccess(op: Access & { name: string }) {
  if (op.scopes.length > 0) throw new Error(`${op.name}: a console-only operation takes no scope (an owner's session holds them all)`);
  return op.consoleActs === 'address' ? ConsoleSessionRoute() : RequireConsole({ agentOwner: op.consoleActs === 'agent-owner' });
}

/**
 * The declaration a route handler states with {@link Runs} (the same object), or undefined for a
 * route that runs none.
 * @param handler a controller method, e.g. `CheckoutController.prototype.create`.
 */
export function routeOperation(handler: object): OperationSpec<unknown> | undefined {
  return Reflect.getMetadata(RUNS_OPERATION, handler) as OperationSpec<unknown> | undefined;
}

/**
 * Runs an operation's work on a route of idempotency mode `none`, which no interceptor runs (DESIGN
 * §17): prepare → run → after, with no key and no record.
 * @returns the work's result, typed as the route answers it.
 */
export async function runWork<T>(work: AnyIdempotentWork | Promise<AnyIdempotentWork>): Promise<T> {
  return (await runUnkeyed(await work)) as T;
}
