import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { AddressInfo } from 'node:net';
import type { TestApp } from './app';

/** A tool result's structuredContent (the REST body, or our error body when isError). */
export type ToolBody = Record<string, unknown>;

/** Makes `t` listen on an ephemeral loopback port; returns the MCP endpoint URL. */
export async function listenForMcp(t: TestApp): Promise<string> {
  await t.app.listen(0, '127.0.0.1');
  return `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}/mcp`;
}

/**
 * Official MCP SDK clients (`Client` + `StreamableHTTPClientTransport`) for the e2e suites: one per
 * credential, all closed by {@link closeAll}.
 */
export class McpClients {
  private readonly clients: Client[] = [];

  constructor(private readonly url: () => string) {}

  /** A connected client sending `headers` on every request. */
  async connect(headers: Record<string, string>): Promise<Client> {
    const client = new Client({ name: 'mcp-e2e', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(this.url()), { requestInit: { headers } }));
    this.clients.push(client);
    return client;
  }

  /** A connected client authenticated with `X-Api-Key: key`. */
  asKey(key: string): Promise<Client> {
    return this.connect({ 'X-Api-Key': key });
  }

  async closeAll(): Promise<void> {
    await Promise.all(this.clients.map((c) => c.close().catch(() => undefined)));
  }
}

/** Calls a tool; returns [isError, structuredContent], checking the text content is the same JSON. */
export async function callTool(client: Client, name: string, args: ToolBody = {}): Promise<[boolean, ToolBody]> {
  const r = (await client.callTool({ name, arguments: args })) as CallToolResult;
  const text = (r.content[0] as { text: string }).text;
  expect(JSON.parse(text)).toEqual(r.structuredContent);
  return [r.isError === true, r.structuredContent as ToolBody];
}

/** Calls a tool that must succeed; returns its body. */
export async function okTool(client: Client, name: string, args: ToolBody = {}): Promise<ToolBody> {
  const [isError, body] = await callTool(client, name, args);
  if (isError) throw new Error(`${name} failed: ${JSON.stringify(body)}`);
  return body;
}

/** Calls a tool that must be refused with `code`; returns our error body. */
export async function refusedTool(client: Client, name: string, args: ToolBody, code: string): Promise<ToolBody> {
  const [isError, body] = await callTool(client, name, args);
  expect([isError, body.code]).toEqual([true, code]);
  expect(body.requestId).toEqual(expect.any(String));
  return body;
}
