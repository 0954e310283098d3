import type { ClassConstructor } from 'class-transformer';
import type { Principal } from './auth/principal';
import type { Scope } from './auth/scopes';
import type { AnyIdempotentWork } from './idempotency/idempotency.service';

/**
 * The kinds of credential a principal can come from (DESIGN §3, §17). A new kind (the console's
 * cookie session, DESIGN §19) is one more member of {@link Principal}'s `kind`; every access check
 * reads it from here.
 */
export type CredentialKind = Principal['kind'];

/**
 * How an operation uses Idempotency-Key (DESIGN §5, §17):
 * - `required`: a missing key → 400 idempotency_required; the record is written in the handler's transaction.
 * - `optional`: a key is honoured when sent.
 * - `row-owned`: required, and the operation's own row (the payment, UNIQUE(agent_id, key)) is the
 *   record of success; refusals are stored records; chain work runs outside any transaction.
 * - `none`: reads and calls that take no key.
 */
export type IdempotencyMode = 'required' | 'optional' | 'row-owned' | 'none';

/**
 * Whom a console session acts for when it runs a console-only operation (DESIGN §19):
 * - `organization` (the default): an organisation the signed-in address owns (`X-Console-Organization`);
 * - `agent-owner`: that, or one agent whose owner address it is (`X-Console-Agent`; no scope): the
 *   work must keep to `principal.agentId` (AgentsService.requireOwned);
 * - `address`: the signed-in address itself, no organisation (self-serve organisation creation).
 */
export type ConsoleActs = 'organization' | 'agent-owner' | 'address';

/** Who may run an operation: any one of `scopes` (empty = any valid credential) and, when given, one of `kinds`. */
export interface Access {
  readonly scopes: readonly Scope[];
  readonly kinds?: readonly CredentialKind[];
  /** For `kinds: ['console']`: whom the session acts for ({@link ConsoleActs}; default `organization`). */
  readonly consoleActs?: ConsoleActs;
}

/** What an operation's work sees besides its input. */
export interface OperationContext {
  principal: Principal;
  /** The validated Idempotency-Key, when one was sent. */
  key?: string;
  /** Path parameters (REST) or the tool's parameter fields (MCP), e.g. `{id}`. */
  params: Record<string, string>;
}

/**
 * A declared unit of work (DESIGN §17): name, access (scopes and credential kinds), input DTO,
 * idempotency mode, and the work itself in the shape the idempotency service runs:
 * `{run}` (in the key's transaction), `{prepare, run}` (a network step before that transaction, the
 * former `IdempotentSteps`), `{prepare?, run, after}` (a side-effecting network step after it, under
 * an in-flight claim) or a row-owned work (RowOwnedWork). Every transport runs it
 * through the same steps: the runner for MCP and A2A, the guard + interceptor + pipe on REST.
 */
export interface Operation<I = Record<string, unknown>> extends OperationSpec<I> {
  /**
   * The declaration this operation was made from ({@link defineOperation}): the very object its REST
   * route states with `@Runs`, so a test can prove that a tool and a route run one declaration.
   */
  readonly declaration: OperationSpec<I>;
  work(ctx: OperationContext, input: I): AnyIdempotentWork | Promise<AnyIdempotentWork>;
}

/**
 * The declaration of an operation without its work: what a REST route states with {@link Runs}
 * (its guard, interceptor and pipe read it), and what the runner checks before the work.
 */
export interface OperationSpec<I = Record<string, unknown>> extends Access {
  /** Also the scope of its idempotency keys, shared by every transport (DESIGN §5, §17). */
  readonly name: string;
  /** The DTO the input is validated as (validateInput); absent: the input is passed as it is. */
  readonly input?: ClassConstructor<I>;
  readonly idempotency: IdempotencyMode;
}

/**
 * An operation from its declaration `spec` (declared once in its domain's `<d>.operations.ts`,
 * DESIGN §17) and its `work`. The declaration's fields are copied onto the operation, which the
 * runner reads, and the declaration itself is kept as {@link Operation.declaration}.
 */
export function defineOperation<I>(spec: OperationSpec<I>, work: Operation<I>['work']): Operation<I> {
  return { ...spec, declaration: spec, work };
}
