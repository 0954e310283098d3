// What a route running a keyed operation (@Runs) declares and returns (docs/architecture.md §5), apart from the
// decorator itself, so the interceptor and the decorator (which names the interceptor) share it without a cycle.
import type { Principal } from '../auth/principal';
import { AppError } from '../../common/errors/app-error';
import { type AnyIdempotentWork, type IdempotentWork, isRowOwned } from './idempotency.service';

export const IDEMPOTENT = 'idempotency:options';
export interface IdempotentOptions {
  /** Missing key → 400 idempotency_required (docs/api.md Conventions 2, docs/architecture.md §5). */
  required: boolean;
  /**
   * The declared operation the route runs (DESIGN §17): its key is scoped to the operation
   * ({@link operationScope}), never to the HTTP method and path, so the same key over REST, MCP and
   * A2A finds the same record. The handler returns the operation's work ({@link IdempotentSteps},
   * `{prepare?, run, after?}` or a row-owned work): network steps run with no transaction held, then
   * `run` inside the key's locked transaction (docs/architecture.md §5).
   */
  operation: string;
}

/** What scopes a key of a declared operation: the principal, then the operation's name (DESIGN §5, §17). */
export function operationScope(principal: Pick<Principal, 'actor'>, operation: string): string[] {
  return [principal.actor, 'op', operation];
}

/**
 * Runs `work` for a call without an Idempotency-Key: prepare → run → after, in order.
 * @throws Error for row-owned work, which always has a key (its mode requires one).
 */
export async function runUnkeyed(work: AnyIdempotentWork): Promise<unknown> {
  if (isRowOwned(work)) throw new AppError('idempotency_required', 'This operation requires an Idempotency-Key');
  const prepared = work.prepare ? await work.prepare() : undefined;
  const ran = await work.run(prepared);
  return work.after ? work.after(ran) : ran;
}

/**
 * What a route running an operation with a key may return: its network checks (`prepare`,
 * side-effect free, may be absent when the request needs none) and its transactional part
 * (`run`, which opens or joins a transaction itself and re-checks what `prepare` saw).
 */
export class IdempotentSteps<P, T> implements IdempotentWork<P, T> {
  constructor(
    readonly run: (prepared: P) => Promise<T>,
    readonly prepare?: () => Promise<P>,
  ) {}

  /** Both steps in order, for a call without an Idempotency-Key. */
  async execute(): Promise<T> {
    const prepared = this.prepare ? await this.prepare() : (undefined as P);
    return this.run(prepared);
  }
}

