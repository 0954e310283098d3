import { randomUUID } from 'node:crypto';
import { createTestApp, TestApp } from '../support/app';
import { callTool, listenForMcp, McpClients } from '../support/mcp-client';
import { createKey, createOrg, TestOrg } from '../support/factories';

jest.setTimeout(60_000);

type Body = Record<string, unknown>;
/** The error body without its requestId (which differs per request). */
const errorOf = (body: Body) => ({ error: body.error, code: body.code, details: body.details });

/**
 * Every entry point declared once (issue 31, DESIGN §15, §17): reads are operations (declared
 * scopes and input, no idempotency key), and MCP validates once — the kernel's `validateInput`
 * refuses, so REST and MCP give the same body for the same bad input.
 */
describe('the kernel: reads are operations, and MCP validates once', () => {
  let t: TestApp;
  let url: string;
  let org: TestOrg;
  const mcp = new McpClients(() => url);

  beforeAll(async () => {
    t = await createTestApp();
    url = await listenForMcp(t);
    org = await createOrg(t.app);
  });
  afterAll(async () => {
    await mcp.closeAll();
    await t?.close();
  });

  const records = async (organizationId: string) =>
    ((await t.dataSource.query('SELECT count(*)::int AS n FROM idempotency_records WHERE organization_id = $1', [organizationId])) as Array<{ n: number }>)[0].n;

  it('a read tool called with an idempotencyKey runs unkeyed: no lock, no idempotency record, a fresh answer each time', async () => {
    const reader = await createOrg(t.app);
    const client = await mcp.asKey(reader.key);
    const key = `read-${randomUUID()}`;
    const [listError, first] = await callTool(client, 'svc_checkout_list', { limit: 5, idempotencyKey: key });
    expect(listError).toBe(false);
    expect(first.data).toEqual([]);
    const created = await t.http.post('/api/v1/checkout-sessions').set('X-Api-Key', reader.key).send({ amount: '3.00', description: 'after the first read' });
    expect(created.status).toBe(200);
    // Not a replay of the first answer: the read ran again.
    const [, second] = await callTool(client, 'svc_checkout_list', { limit: 5, idempotencyKey: key });
    expect((second.data as Body[]).map((c) => c.id)).toEqual([created.body.id]);
    // Another read under the same key is not an idempotency conflict either.
    const [meError] = await callTool(client, 'svc_me', { idempotencyKey: key });
    const [getError, got] = await callTool(client, 'svc_checkout_get', { id: created.body.id as string, idempotencyKey: key });
    expect([meError, getError, got.id]).toEqual([false, false, created.body.id]);
    expect(await records(reader.organizationId)).toBe(0);
  });

  it('a read refused for a missing scope: the same 403 missing_scope body over REST and MCP', async () => {
    const key = await createKey(t.app, org.organizationId, ['offerings:read']);
    const client = await mcp.asKey(key);
    const cases: Array<[string, string, Body]> = [
      ['/api/v1/checkout-sessions', 'svc_checkout_list', {}],
      [`/api/v1/checkout-sessions/${randomUUID()}`, 'svc_checkout_get', { id: randomUUID() }],
      ['/api/v1/escrows', 'svc_escrow_list', {}],
      ['/api/v1/invoices', 'svc_invoice_list', {}],
      ['/api/v1/refunds', 'svc_refund_list', {}],
      ['/api/v1/webhook-endpoints', 'svc_webhook_endpoint_get', {}],
    ];
    for (const [path, tool, args] of cases) {
      const rest = await t.http.get(path).set('X-Api-Key', key);
      expect([path, rest.status, rest.body.code]).toEqual([path, 403, 'missing_scope']);
      const [isError, viaTool] = await callTool(client, tool, args);
      expect([tool, isError]).toEqual([tool, true]);
      expect(errorOf(viaTool)).toEqual(errorOf(rest.body));
    }
  });

  it('the same bad input on REST and MCP gets the same invalid_request body (wrong type, missing field, unknown field)', async () => {
    const client = await mcp.asKey(org.key);
    const bodies: Body[] = [
      { name: 5, amount: '10.00' }, // wrong type
      { name: 'No price' }, // missing field
      { name: 'Extra', amount: '10.00', surprise: true }, // unknown field
      { amount: 10, escrowTemplateId: 'nope' }, // several at once
    ];
    for (const body of bodies) {
      const rest = await t.http.post('/api/v1/offerings').set('X-Api-Key', org.key).send(body);
      expect(rest.status).toBe(400);
      expect(rest.body.code).toBe('invalid_request');
      const [isError, viaTool] = await callTool(client, 'svc_offering_create', body);
      expect(isError).toBe(true);
      expect(errorOf(viaTool)).toEqual(errorOf(rest.body));
    }
    // A read's arguments too: its query DTO is the one check (REST's query string is text; MCP sends JSON).
    const restList = await t.http.get('/api/v1/offerings?limit=0&surprise=1').set('X-Api-Key', org.key);
    const [, toolList] = await callTool(client, 'svc_offering_list', { limit: 0, surprise: 1 });
    expect(restList.status).toBe(400);
    expect(errorOf(toolList)).toEqual(errorOf(restList.body));
    // A path parameter keeps REST's answer to a malformed id: 404 not_found.
    const restGet = await t.http.get('/api/v1/offerings/not-an-id').set('X-Api-Key', org.key);
    const [, toolGet] = await callTool(client, 'svc_offering_get', { id: 'not-an-id' });
    expect(restGet.status).toBe(404);
    expect(errorOf(toolGet)).toEqual(errorOf(restGet.body));
  });
});
