import { Inject, Injectable, Logger } from '@nestjs/common';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, CallToolResult, ListToolsRequestSchema, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { Principal } from '../../kernel/auth/principal';
import { AppError } from '../../common/errors/app-error';
import { toAppError } from '../../common/errors/all-exceptions.filter';
import { resolveIdempotencyKey } from '../../kernel/idempotency/idempotency.interceptor';
import { accessRefusal } from '../../kernel/access';
import { Runner } from '../../kernel/runner';
import { type McpTool, serviceToolOperation, type ServiceTool } from './mcp-tool';
import { MCP_TOOLS } from './tools';
import { toolInputSchema } from './tool-schema';
import { errorBody } from '../../common/errors/error-body';

/** Server name and version shown to MCP clients at initialize. */
export const MCP_SERVER_INFO = { name: 'payments-control-plane', version: '2.0.0' };

/**
 * Builds the MCP server for one request (stateless Streamable HTTP: a new server and transport
 * per request, DESIGN §15) around the caller's principal. tools/list shows the tools whose
 * operation the principal may run (the kernel's access check), each with the input schema derived
 * from its operation (tool-schema.ts); tools/call splits the arguments into the operation's input,
 * its path parameters and `idempotencyKey`, and runs the tool's operation through the kernel's
 * runner (access, validation, idempotency, work: DESIGN §17), which is the one check of the
 * arguments, so a bad argument gets the body REST gives. It answers the REST body as
 * `structuredContent` (with its JSON as text), or an `isError` result with our error body. Only
 * malformed requests become protocol errors.
 */
@Injectable()
export class McpService {
  private readonly logger = new Logger('Mcp');
  private readonly tools: McpTool[];
  private readonly byName: Map<string, McpTool>;
  /** Each tool's input schema (tools/list), derived once from its operation. */
  private readonly schemas = new Map<string, Tool['inputSchema']>();

  constructor(
    @Inject(MCP_TOOLS) tools: Array<McpTool | ServiceTool>,
    private readonly runner: Runner,
  ) {
    this.tools = tools.map((t) => ('operation' in t ? t : { ...describeFields(t), operation: serviceToolOperation(t) }));
    this.byName = new Map(this.tools.map((t) => [t.name, t]));
    for (const t of this.tools) this.schemas.set(t.name, toolInputSchema(t.operation, t.params) as Tool['inputSchema']);
  }

  /** A fresh low-level MCP server bound to `principal`; connect it to one transport, once. */
  serverFor(principal: Principal, requestId: string): Server {
    const server = new Server(MCP_SERVER_INFO, { capabilities: { tools: { listChanged: false } } });
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: this.tools.filter((t) => !accessRefusal(principal, t.operation)).map((t) => this.describe(t)) }));
    server.setRequestHandler(CallToolRequestSchema, (req) => this.call(principal, requestId, req.params.name, req.params.arguments ?? {}));
    return server;
  }

  /** Names of the tools `principal` may call (what tools/list shows). */
  visibleTools(principal: Principal): string[] {
    return this.tools.filter((t) => !accessRefusal(principal, t.operation)).map((t) => t.name);
  }

  private describe(tool: McpTool): Tool {
    return {
      name: tool.name,
      title: tool.title,
      description: tool.description,
      inputSchema: this.schemas.get(tool.name)!,
      annotations: { title: tool.title, ...tool.annotations },
    };
  }

  private async call(principal: Principal, requestId: string, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
    const tool = this.byName.get(name);
    try {
      if (!tool) throw new AppError('not_found', `No tool named ${name}`, { reason: 'unknown_tool' });
      // Access first, as the REST guard runs before anything reads the body.
      const refused = accessRefusal(principal, tool.operation);
      if (refused) throw refused;
      const { idempotencyKey: rawKey, ...rest } = args;
      const key = resolveIdempotencyKey(undefined, rawKey);
      const paramNames = new Set(Object.keys(tool.params ?? {}));
      const body = Object.fromEntries(Object.entries(rest).filter(([k]) => !paramNames.has(k)));
      const params = Object.fromEntries(Object.entries(rest).filter(([k, v]) => paramNames.has(k) && v !== undefined && v !== null).map(([k, v]) => [k, String(v)]));
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

/** The MCP-facing fields of a read tool (its `run` and declaration stay in its operation). */
function describeFields(t: ServiceTool): Omit<McpTool, 'operation'> {
  return { name: t.name, title: t.title, description: t.description, annotations: t.annotations, ...(t.params ? { params: t.params } : {}) };
}
