import { Inject, Injectable, Logger } from '@nestjs/common';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, CallToolResult, ListToolsRequestSchema, Tool } from '@modelcontextprotocol/sdk/types.js';
import { plainToInstance } from 'class-transformer';
import { validate } from 'class-validator';
import { z } from 'zod';
import type { Principal } from '../../common/auth/principal';
import { AppError } from '../../common/errors/app-error';
import { toAppError } from '../../common/errors/all-exceptions.filter';
import { canonicalJson, sha256Hex } from '../../common/idempotency/fingerprint';
import { resolveIdempotencyKey } from '../../common/idempotency/idempotency.interceptor';
import { IdempotencyService, outcomeError } from '../../common/idempotency/idempotency.service';
import { IdempotentSteps } from '../../common/idempotency/idempotent.decorator';
import { validationFields } from '../../common/validation/validation-errors';
import type { McpTool } from './mcp-tool';
import { MCP_TOOLS } from './tools';

/** Server name and version shown to MCP clients at initialize. */
export const MCP_SERVER_INFO = { name: 'payments-control-plane', version: '2.0.0' };

/**
 * Builds the MCP server for one request (stateless Streamable HTTP: a new server and transport
 * per request, docs/architecture.md §15) around the caller's principal. tools/list shows the
 * tools the principal may call; tools/call runs one through the checks every REST route has and
 * answers the REST body as `structuredContent` (with its JSON as text), or an `isError` result
 * with our error body. Only malformed requests become protocol errors.
 */
@Injectable()
export class McpService {
  private readonly logger = new Logger('Mcp');
  private readonly byName: Map<string, McpTool>;

  constructor(
    @Inject(MCP_TOOLS) private readonly tools: McpTool[],
    private readonly idempotency: IdempotencyService,
  ) {
    this.byName = new Map(tools.map((t) => [t.name, t]));
  }

  /** A fresh low-level MCP server bound to `principal`; connect it to one transport, once. */
  serverFor(principal: Principal, requestId: string): Server {
    const server = new Server(MCP_SERVER_INFO, { capabilities: { tools: { listChanged: false } } });
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: this.tools.filter((t) => !refusal(t, principal)).map(describe) }));
    server.setRequestHandler(CallToolRequestSchema, (req) => this.call(principal, requestId, req.params.name, req.params.arguments ?? {}));
    return server;
  }

  /** Names of the tools `principal` may call (what tools/list shows). */
  visibleTools(principal: Principal): string[] {
    return this.tools.filter((t) => !refusal(t, principal)).map((t) => t.name);
  }

  /**
   * The call under `key`: the REST record store and rules (docs/architecture.md §5), scoped by
   * organisation, principal and tool name. A tool returning steps has its network part run
   * before the locked transaction, as its REST twin does.
   * @throws AppError the stored refusal on a replay; idempotency_conflict 409/422.
   */
  private async idempotent(principal: Principal, requestId: string, tool: McpTool, input: Record<string, unknown>, key: string, args: Record<string, unknown>): Promise<unknown> {
    const request = {
      organizationId: principal.organizationId,
      scope: [principal.actor, 'MCP', tool.name],
      key,
      fingerprint: sha256Hex(canonicalJson(withoutKey(args))),
      method: 'MCP',
      path: tool.name,
    };
    const result = tool.steps ? await tool.run({ principal, requestId }, input) : undefined;
    const outcome = await this.idempotency.execute(
      request,
      result instanceof IdempotentSteps ? (result as IdempotentSteps<unknown, unknown>) : { run: () => tool.run({ principal, requestId }, input) },
    );
    const refusal = outcomeError(outcome);
    if (refusal) throw refusal;
    return outcome.body;
  }

  private async call(principal: Principal, requestId: string, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
    const tool = this.byName.get(name);
    try {
      if (!tool) throw new AppError('not_found', `No tool named ${name}`, { reason: 'unknown_tool' });
      const refused = refusal(tool, principal);
      if (refused) throw refused;
      if (args.idempotencyKey === undefined && tool.idempotency === 'required') {
        throw new AppError('idempotency_required', `${tool.name} requires idempotencyKey`, { fields: [{ param: 'idempotencyKey', message: 'is required' }] });
      }
      const key = resolveIdempotencyKey(undefined, args.idempotencyKey);
      const input = await validateInput(tool, args);
      const body =
        key && !tool.ownIdempotency
          ? await this.idempotent(principal, requestId, tool, input, key, args)
          : await settle(await tool.run({ principal, requestId, idempotencyKey: key }, input));
      return { content: [{ type: 'text', text: JSON.stringify(body) }], structuredContent: body as Record<string, unknown> };
    } catch (err) {
      const e = toAppError(err);
      if (e.code === 'internal') this.logger.error({ err, requestId, tool: name }, 'tool failed');
      const body = { error: e.message, code: e.code, requestId, ...(e.details !== undefined ? { details: e.details } : {}) };
      return { isError: true, content: [{ type: 'text', text: JSON.stringify(body) }], structuredContent: body };
    }
  }
}

/** A tool's result, its steps run in order when it returned {@link IdempotentSteps}. */
async function settle(result: unknown): Promise<unknown> {
  return result instanceof IdempotentSteps ? (result as IdempotentSteps<unknown, unknown>).execute() : result;
}

/** Why `principal` may not call `tool` (missing_scope / forbidden, as REST would answer), or null. */
function refusal(tool: McpTool, principal: Principal): AppError | null {
  if (tool.scopes.length > 0 && !tool.scopes.some((s) => principal.scopes.has(s))) {
    return new AppError('missing_scope', `This tool needs scope ${tool.scopes.join(' or ')}`, { required: [...tool.scopes], granted: principal.grantedScopes });
  }
  if (tool.credentialKind === 'agent' && principal.kind !== 'agent') {
    return new AppError('forbidden', 'This tool needs an agent key', { reason: 'agent_key_required' });
  }
  return null;
}

function describe(tool: McpTool): Tool {
  return {
    name: tool.name,
    title: tool.title,
    description: tool.description,
    inputSchema: z.toJSONSchema(tool.input, { target: 'draft-7', io: 'input' }) as Tool['inputSchema'],
    annotations: { title: tool.title, ...tool.annotations },
  };
}

function withoutKey(args: Record<string, unknown>): Record<string, unknown> {
  const { idempotencyKey: _omit, ...rest } = args;
  return rest;
}

/**
 * The zod shape first (types, as tools/list promised), then the REST DTO with the REST pipe's
 * options (unknown fields refused), so a bad field answers the same body as REST.
 * @throws AppError invalid_request with `details.fields`.
 */
async function validateInput(tool: McpTool, args: Record<string, unknown>): Promise<Record<string, unknown>> {
  const parsed = tool.input.safeParse(args);
  if (!parsed.success) {
    const fields = parsed.error.issues.map((i) => ({ param: i.path.join('.') || 'arguments', message: i.message }));
    throw new AppError('invalid_request', fields.map((f) => `${f.param}: ${f.message}`).join('; '), { fields });
  }
  const input = parsed.data as Record<string, unknown>;
  if (!tool.dto) return input;
  const params = new Set(['idempotencyKey', ...(tool.params ?? [])]);
  const body = Object.fromEntries(Object.entries(args).filter(([k]) => !params.has(k)));
  const dto = plainToInstance(tool.dto, body);
  const errors = await validate(dto, { whitelist: true, forbidNonWhitelisted: true });
  if (errors.length > 0) {
    const fields = validationFields(errors);
    throw new AppError('invalid_request', fields.map((f) => f.message).join('; ') || 'Invalid request', { fields });
  }
  return { ...(dto as Record<string, unknown>), ...Object.fromEntries(Object.entries(input).filter(([k]) => params.has(k))) };
}
