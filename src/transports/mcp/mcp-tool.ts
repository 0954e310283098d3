import type { Principal } from '../../kernel/auth/principal';
import { defineOperation, type Operation, type OperationSpec } from '../../kernel/operation';
import type { ToolParam } from './tool-schema';

export type { ToolParam } from './tool-schema';

/** What a read tool's `run` gets besides its input: who calls. */
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

/** What every tool shows in tools/list besides its input schema, which is derived from its operation (tool-schema.ts). */
interface McpToolFace {
  /** `svc_<noun>_<verb>` (docs/api.md, Tool interface). */
  readonly name: string;
  readonly title: string;
  readonly description: string;
  readonly annotations: McpToolAnnotations;
  /** Arguments that are path or query parameters of the REST twin (e.g. `id`), not part of the operation's input DTO. */
  readonly params?: Readonly<Record<string, ToolParam>>;
}

/**
 * One `svc_*` tool (DESIGN §15, §17): a declarative adapter `{name, operation, annotations}` over a
 * declared operation, which the MCP server runs through the kernel's runner (access, validation of
 * the operation's DTO, idempotency, then the work) exactly as its REST twin runs it. The tool adds
 * only what MCP shows: title, description, annotations and which arguments are path parameters;
 * its input schema is derived from the operation (its DTO, `params` and idempotency mode:
 * {@link toolInputSchema}), so the kernel's validation is the only one that refuses.
 *
 * To add a tool: one file in `tools/` with an @Injectable class implementing this (naming an
 * operation declared in its domain's `<d>.operations.ts`; a read implements {@link ServiceTool}),
 * listed in `MCP_TOOLS` (tools/index.ts).
 */
export interface McpTool<Input = Record<string, unknown>> extends McpToolFace {
  /** The operation the tool runs: its domain's, the same object its REST twin's `@Runs` declaration belongs to. */
  readonly operation: Operation<Input>;
}

/**
 * A read tool (DESIGN §17: reads are operations too): `declaration` is the read's declaration in its
 * domain's `<d>.operations.ts`, the very object its REST route states with `@Runs` (access, input
 * DTO, `idempotency: 'none'`), and `run` answers the REST body with the service method REST calls.
 * The MCP server turns it into an {@link McpTool} ({@link serviceToolOperation}).
 */
export interface ServiceTool<Input extends Record<string, unknown> = Record<string, unknown>> extends McpToolFace {
  readonly declaration: OperationSpec<object>;
  /** Answers the call with the REST response body. Throws AppError for refusals (404 not_found, …). */
  run(ctx: McpToolContext, input: Input): Promise<unknown>;
}

/**
 * The operation of a read {@link ServiceTool}: its declaration, and as work `{run}`: `run` with the
 * validated arguments and the parameter fields beside them. A read takes no key: an
 * `idempotencyKey` sent is checked for form and ignored (no lock, no record), as REST ignores the
 * header on a GET.
 * @throws Error at start-up when the declaration is not a read (`idempotency` other than `none`).
 */
export function serviceToolOperation(tool: ServiceTool): Operation {
  const spec = tool.declaration as OperationSpec;
  if (spec.idempotency !== 'none') throw new Error(`${tool.name}: a read tool's operation ${spec.name} must declare idempotency 'none'`);
  return defineOperation(spec, (ctx, input) => ({ run: () => tool.run({ principal: ctx.principal }, { ...input, ...ctx.params }) }));
}
