import type { ClassConstructor } from 'class-transformer';
import type { z } from 'zod';
import type { Principal } from '../../kernel/auth/principal';
import type { Scope } from '../../kernel/auth/scopes';
import { defineOperation, type Operation, type OperationSpec } from '../../kernel/operation';

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
 * To add a tool: one file in `tools/` with an @Injectable class implementing this (naming an
 * operation declared in its domain's `<d>.operations.ts`; a plain read implements
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
  /** The operation the tool runs: its domain's, the same object its REST twin's `@Runs` declaration belongs to (for read {@link ServiceTool}s the MCP server declares one from their fields). */
  readonly operation: Operation<Input>;
}

/**
 * A read tool over a plain service method (DESIGN §17: "plain reads may stay service methods with
 * declared scopes"): its fields declare who may call it (scopes, credential kind) and how its
 * arguments are validated (the REST query DTO), and `run` answers the REST body. Every tool that
 * changes state names its domain's declared operation instead ({@link McpTool}); a read has no
 * network step before a transaction and no required key. The MCP server turns it into an
 * {@link McpTool} ({@link serviceToolOperation}), so it runs through the same runner.
 */
export interface ServiceTool<Input extends Record<string, unknown> = Record<string, unknown>> extends Omit<McpTool<Input>, 'operation'> {
  /** Any one of these grants the tool (after `:*` and write⇒read expansion); empty = any credential. */
  readonly scopes: readonly Scope[];
  /** Restricts the tool to one credential kind (agent spend tools need an agent key). */
  readonly credentialKind?: 'agent';
  /** The REST query DTO the arguments (without `idempotencyKey` and path parameters) are validated as, if any. */
  readonly dto?: ClassConstructor<object>;
  /** Answers the call with the REST response body. Throws AppError for refusals (404 not_found, …). */
  run(ctx: McpToolContext, input: Input): Promise<unknown>;
}

/**
 * The generic operation of a read {@link ServiceTool} (only reads use it; every state-changing tool
 * names its domain's declared operation, DESIGN §17): named after the tool, access from its
 * `scopes` and `credentialKind`, its `dto` validating the arguments, idempotency `optional` (as
 * before: a key sent is honoured), and as work `{run}`: `run` with the validated arguments and the
 * parameter fields beside them.
 */
export function serviceToolOperation(tool: ServiceTool): Operation {
  const spec: OperationSpec = {
    name: tool.name,
    scopes: tool.scopes,
    ...(tool.credentialKind ? { kinds: [tool.credentialKind] } : {}),
    ...(tool.dto ? { input: tool.dto as ClassConstructor<Record<string, unknown>> } : {}),
    idempotency: 'optional',
  };
  return defineOperation(spec, (ctx, input) => ({ run: () => tool.run({ principal: ctx.principal }, { ...input, ...ctx.params }) }));
}
