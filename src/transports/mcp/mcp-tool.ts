import type { ClassConstructor } from 'class-transformer';
import type { z } from 'zod';
import type { Principal } from '../../kernel/auth/principal';
import type { Scope } from '../../kernel/auth/scopes';
import type { IdempotentSteps } from '../../kernel/idempotency/idempotent.decorator';
import { defineOperation, type IdempotencyMode, type Operation, type OperationSpec } from '../../kernel/operation';

/** What a service tool's handler gets besides its input: who calls. */
export interface McpToolContext {
  principal: Principal;
}

/** MCP tool annotations (hints for hosts, never security). */
export interface McpToolAnnotations {
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

/**
 * One `svc_*` tool (DESIGN §15, §17): a declarative adapter `{name, operation, annotations}` over a
 * declared operation, which the MCP server runs through the kernel's runner (access, validation of
 * the operation's DTO, idempotency, then the work) exactly as its REST twin runs it. The tool adds
 * only what MCP shows: title, description, annotations and the zod input schema of tools/list (the
 * REST body, path/query parameters and `idempotencyKey`).
 *
 * To add a tool: one file in `tools/` with an @Injectable class implementing this (or
 * {@link ServiceTool}), listed in `MCP_TOOLS` (tools/index.ts).
 */
export interface McpTool<Input = Record<string, unknown>> {
  /** `svc_<noun>_<verb>` (docs/api.md, Tool interface). */
  readonly name: string;
  readonly title: string;
  readonly description: string;
  readonly annotations: McpToolAnnotations;
  /** The input schema shown in tools/list: the REST body (and path/query parameters) plus `idempotencyKey`. */
  readonly input: z.ZodObject;
  /** Input fields that are path or query parameters, not part of the operation's body. */
  readonly params?: readonly string[];
  /** The operation the tool runs (for {@link ServiceTool}s the MCP server declares it from their fields). */
  readonly operation: Operation<Input>;
}

/**
 * A tool over a plain service method (reads and CRUD that have no declared operation of their own
 * yet): its fields are the operation's declaration (scopes, credential kind, DTO, idempotency) and
 * `run` its work. The MCP server turns it into an {@link McpTool} ({@link serviceToolOperation}),
 * so it runs through the same runner.
 */
export interface ServiceTool<Input extends Record<string, unknown> = Record<string, unknown>> extends Omit<McpTool<Input>, 'operation'> {
  /** Any one of these grants the tool (after `:*` and write⇒read expansion); empty = any credential. */
  readonly scopes: readonly Scope[];
  /** Restricts the tool to one credential kind (agent spend tools need an agent key). */
  readonly credentialKind?: 'agent';
  /** The REST DTO the body (the input without `idempotencyKey` and path parameters) is validated as, if any. */
  readonly dto?: ClassConstructor<object>;
  /** True when {@link run} returns IdempotentSteps (network checks first, then the transactional part). */
  readonly steps?: boolean;
  /** `required` where the REST twin requires Idempotency-Key (DESIGN §5); default optional. */
  readonly idempotency?: Exclude<IdempotencyMode, 'row-owned'>;
  /** Runs the call; returns the REST response body (or IdempotentSteps when {@link steps}). Throws AppError for refusals. */
  run(ctx: McpToolContext, input: Input): Promise<unknown>;
}

/**
 * The operation a {@link ServiceTool} declares through its fields (named after the tool): its DTO
 * validates the body, and `run` gets the validated body with the parameter fields beside it.
 */
export function serviceToolOperation(tool: ServiceTool): Operation {
  const spec: OperationSpec = {
    name: tool.name,
    scopes: tool.scopes,
    ...(tool.credentialKind ? { kinds: [tool.credentialKind] } : {}),
    ...(tool.dto ? { input: tool.dto as ClassConstructor<Record<string, unknown>> } : {}),
    idempotency: tool.idempotency ?? 'optional',
  };
  return defineOperation(spec, async (ctx, input) => {
    const full = { ...input, ...ctx.params };
    if (tool.steps) return (await tool.run({ principal: ctx.principal }, full)) as IdempotentSteps<unknown, unknown>;
    return { run: () => tool.run({ principal: ctx.principal }, full) };
  });
}
