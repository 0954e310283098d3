import { Inject, Injectable, Logger } from '@nestjs/common';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, CallToolResult, ListToolsRequestSchema, Tool } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { Principal } from '../../kernel/auth/principal';
import { AppError } from '../../common/errors/app-error';
import { toAppError } from '../../common/errors/all-exceptions.filter';
import { resolveIdempotencyKey } from '../../kernel/idempotency/idempotency.interceptor';
import { accessRefusal } from '../../kernel/access';
import { Runner } from '../../kernel/runner';
import { type McpTool, serviceToolOperation, type ServiceTool } from './mcp-tool';
import { MCP_TOOLS } from './tools';
import { errorBody } from '../../common/errors/error-body';

/** Server name and version shown to MCP clients at initialize. */
export const MCP_SERVER_INFO = { name: 'payments-control-plane', version: '2.0.0' };

/**
 * Builds the MCP server for one request (stateless Streamable HTTP: a new server and transport
 * per request, DESIGN §15) around the caller's principal. tools/list shows the tools whose
 * operation the principal may run (the kernel's access check); tools/call checks the zod shape
 * tools/list promised, then runs the tool's operation through the kernel's runner (access,
 * validation, idempotency, work: DESIGN §17) and answers the REST body as `structuredContent`
 * (with its JSON as text), or an `isError` result with our error body. Only malformed requests
 * become protocol errors.
 */
@Injectable()
export class McpService {
  private readonly logger = new Logger('Mcp');
  private readonly tools: McpTool[];
  private readonly byName: Map<string, McpTool>;
  /** Each tool's zod shape without `idempotencyKey`, which the runner checks (and before the body, as REST). */
  private readonly shapes = new Map<string, z.ZodObject>();

  constructor(
    @Inject(MCP_TOOLS) tools: Array<McpTool | ServiceTool>,
    private readonly runner: Runner,
  ) {
    this.tools = tools.map((t) => ('operation' in t ? t : { ...describeFields(t), operation: serviceToolOperation(t) }));
    this.byName = new Map(this.tools.map((t) => [t.name, t]));
    for (const t of this.tools) this.shapes.set(t.name, 'idempotencyKey' in t.input.shape ? (t.input.omit({ idempotencyKey: true }) as unknown as z.ZodObject) : t.input);
  }

  /** A fresh low-level MCP server bound to `principal`; connect it to one transport, once. */
  serverFor(principal: Principal, requestId: string): Server {
    const server = new Server(MCP_SERVER_INFO, { capabilities: { tools: { listChanged: false } } });
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: this.tools.filter((t) => !accessRefusal(principal, t.operation)).map(describe) }));
    server.setRequestHandler(CallToolRequestSchema, (req) => this.call(principal, requestId, req.params.name, req.params.arguments ?? {}));
    return server;
  }

  /** Names of the tools `principal` may call (what tools/list shows). */
  visibleTools(principal: Principal): string[] {
    return this.tools.filter((t) => !accessRefusal(principal, t.operation)).map((t) => t.name);
  }

  private async call(principal: Principal, requestId: string, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
    const tool = this.byName.get(name);
    try {
      if (!tool) throw new AppError('not_found', `No tool named ${name}`, { reason: 'unknown_tool' });
      // Access first, as the REST guard runs before anything reads the body.
      const refused = accessRefusal(principal, tool.operation);
      if (refused) throw refused;
      const { idempotencyKey: rawKey, ...rest } = args;
      const parsed = this.shapes.get(tool.name)!.safeParse(rest);
      if (!parsed.success) {
        const fields = parsed.error.issues.map((i) => ({ param: i.path.join('.') || 'arguments', message: i.message }));
        throw new AppError('invalid_request', fields.map((f) => `${f.param}: ${f.message}`).join('; '), { fields });
      }
      const key = resolveIdempotencyKey(undefined, rawKey);
      const paramNames = new Set(tool.params ?? []);
      const source = tool.operation.input ? rest : (parsed.data as Record<string, unknown>);
      const body = Object.fromEntries(Object.entries(source).filter(([k]) => !paramNames.has(k)));
      const params = Object.fromEntries(Object.entries(parsed.data as Record<string, unknown>).filter(([k]) => paramNames.has(k)).map(([k, v]) => [k, String(v)]));
      const { body: result } = await this.runner.invoke(tool.operation, principal, body, key, params);
      return { content: [{ type: 'text', text: JSON.stringify(result) }], structuredContent: result as Record<string, unknown> };
    } catch (err) {
      const e = toAppError(err);
      if (e.code === 'internal') this.logger.error({ err, requestId, tool: name }, 'tool failed');
      const body = errorBody(e, requestId);
      return { isError: true, content: [{ type: 'text', text: JSON.stringify(body) }], structuredContent: { ...body } };
    }
  }
}

/** The MCP-facing fields of a service tool (its `run` and declaration fields stay in its operation). */
function describeFields(t: ServiceTool): Omit<McpTool, 'operation'> {
  return { name: t.name, title: t.title, description: t.description, annotations: t.annotations, input: t.input, ...(t.params ? { params: t.params } : {}) };
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
