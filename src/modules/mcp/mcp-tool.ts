import type { ClassConstructor } from 'class-transformer';
import type { z } from 'zod';
import type { Principal } from '../../common/auth/principal';
import type { Scope } from '../../common/auth/scopes';

/** What a tool handler gets besides its input: who calls, and the request id its errors carry. */
export interface McpToolContext {
  principal: Principal;
  requestId: string;
  /** The call's idempotencyKey, for tools whose service keeps its own idempotency ({@link McpTool.ownIdempotency}). */
  idempotencyKey?: string;
}

/** MCP tool annotations (hints for hosts, never security). */
export interface McpToolAnnotations {
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

/**
 * One `svc_*` tool (docs/architecture.md §15): a thin adapter over the domain service its REST
 * twin calls. The MCP server handles everything around `run`: the credential kind and scopes
 * (`tools/list` shows a tool only when they allow it; a call anyway answers `missing_scope` or
 * `forbidden`), input validation (the zod shape, then the REST DTO, so bad fields answer exactly
 * as REST does), idempotency (the REST store and rules, keyed by the tool name) and errors (an
 * `isError` result carrying our error body).
 *
 * To add a tool: one file in `tools/` with an @Injectable class implementing this, listed in
 * `MCP_TOOLS` (tools/index.ts).
 */
export interface McpTool<Input extends Record<string, unknown> = Record<string, unknown>> {
  /** `svc_<noun>_<verb>` (docs/api.md, Tool interface). */
  readonly name: string;
  readonly title: string;
  readonly description: string;
  /** Any one of these grants the tool (after `:*` and write⇒read expansion); empty = any credential. */
  readonly scopes: readonly Scope[];
  /** Restricts the tool to one credential kind (agent spend tools need an agent key). */
  readonly credentialKind?: 'agent';
  readonly annotations: McpToolAnnotations;
  /** The input schema shown in tools/list: the REST body (and path/query parameters) plus `idempotencyKey`. */
  readonly input: z.ZodObject;
  /** The REST DTO the input (without `idempotencyKey` and path parameters) is validated as, if any. */
  readonly dto?: ClassConstructor<object>;
  /** Input fields that are path or query parameters, not part of the DTO body. */
  readonly params?: readonly string[];
  /**
   * The service behind the tool keeps its own idempotency (agent spends: the payment row is
   * UNIQUE per agent and key, docs/architecture.md §5): the key goes to the service through the
   * context instead of the generic record store, exactly as the REST route passes the header.
   */
  readonly ownIdempotency?: boolean;
  /** True when {@link run} returns IdempotentSteps (network checks first, then the transactional part). */
  readonly steps?: boolean;
  /** `required` where the REST twin requires Idempotency-Key (docs/architecture.md §5). */
  readonly idempotency?: 'required' | 'optional';
  /**
   * Runs the operation; returns the REST response body. Throws AppError for refusals. A tool
   * whose REST twin makes network calls (chain RPC, DNS) returns {@link IdempotentSteps} instead,
   * as that route does, so the network part runs before the idempotent transaction opens
   * (docs/architecture.md §5).
   */
  run(ctx: McpToolContext, input: Input): Promise<unknown>;
}
