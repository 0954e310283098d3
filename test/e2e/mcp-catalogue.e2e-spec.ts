import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { createTestApp, TestApp } from '../support/app';
import { callTool, McpClients, okTool } from '../support/mcp-client';
import { createKey, createOrg, TestOrg } from '../support/factories';

jest.setTimeout(60_000);

type Body = Record<string, unknown>;

/**
 * svc_offering_create|get|list|update and svc_invoice_create|get|list|send (docs/architecture.md
 * §11, §15) through the official MCP client: listed by scope, the REST bodies, JSON-merge update,
 * idempotent replays and the REST refusals.
 */
describe('MCP offering and invoice tools', () => {
  let t: TestApp;
  let base: string;
  let org: TestOrg;
  const mcp = new McpClients(() => `${base}/mcp`);

  beforeAll(async () => {
    t = await createTestApp();
    await t.app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}`;
    org = await createOrg(t.app);
  });
  afterAll(async () => {
    await mcp.closeAll();
    await t?.close();
  });

  const connect = (key: string) => mcp.asKey(key);
  const call = callTool;
  const ok = okTool;

  it('lists the tools by scope', async () => {
    const names = async (scopes: string[]) =>
      (await (await connect(await createKey(t.app, org.organizationId, scopes))).listTools()).tools
        .map((x) => x.name)
        .filter((n) => n.startsWith('svc_offering_') || n.startsWith('svc_invoice_'))
        .sort();
    expect(await names(['offerings:read'])).toEqual(['svc_offering_get', 'svc_offering_list']);
    expect(await names(['offerings:write', 'invoices:write'])).toEqual([
      'svc_invoice_create', 'svc_invoice_get', 'svc_invoice_list', 'svc_invoice_send',
      'svc_offering_create', 'svc_offering_get', 'svc_offering_list', 'svc_offering_update',
    ]);
  });

  it('offerings: create, get, list, JSON-merge update (null clears, absent keeps), the same body as REST', async () => {
    const client = await connect(org.key);
    const created = await ok(client, 'svc_offering_create', { name: 'Mug', description: 'Blue', amount: '12.5', metadata: { sku: 'MUG' } });
    expect(created).toMatchObject({ name: 'Mug', description: 'Blue', amount: '12.50', active: true, metadata: { sku: 'MUG' } });
    expect((await t.http.get(`/api/v1/offerings/${created.id as string}`).set('X-Api-Key', org.key)).body).toEqual(created);
    expect(await ok(client, 'svc_offering_get', { id: created.id })).toEqual(created);
    const updated = await ok(client, 'svc_offering_update', { id: created.id, description: null, active: false });
    expect(updated).toMatchObject({ name: 'Mug', description: null, amount: '12.50', active: false, metadata: { sku: 'MUG' } });
    const archived = await ok(client, 'svc_offering_list', { active: 'false' });
    expect((archived.data as Body[]).map((o) => o.id)).toContain(created.id);
    const [isError, bad] = await call(client, 'svc_offering_create', { name: 'X', amount: '-1' });
    expect([isError, bad.code]).toEqual([true, 'invalid_request']);
  });

  it('invoices: create a draft, send it (INV number), replay the send under one key, refuse a send after void', async () => {
    const client = await connect(org.key);
    const draft = await ok(client, 'svc_invoice_create', {
      customer: { name: 'Ada', email: 'ada@example.com' },
      lineItems: [{ description: 'Consulting', quantity: 2, unitAmount: '100.000001' }],
    });
    expect(draft).toMatchObject({ status: 'draft', number: null, amount: '200.000002' });
    const key = `send-${randomUUID()}`;
    const sent = await ok(client, 'svc_invoice_send', { id: draft.id, idempotencyKey: key });
    expect(sent).toMatchObject({ status: 'open', number: expect.stringMatching(/^INV-\d{6}$/) });
    expect(await ok(client, 'svc_invoice_send', { id: draft.id, idempotencyKey: key })).toEqual(sent);
    expect(await ok(client, 'svc_invoice_get', { id: draft.id })).toMatchObject({ id: draft.id, status: 'open', number: sent.number });
    expect(((await ok(client, 'svc_invoice_list', { status: 'open' })).data as Body[]).map((i) => i.id)).toContain(draft.id);

    const other = await ok(client, 'svc_invoice_create', { customer: { name: 'Bob', email: 'bob@example.com' }, lineItems: [{ description: 'Work', unitAmount: '5.00' }] });
    expect((await t.http.post(`/api/v1/invoices/${other.id as string}/void`).set('X-Api-Key', org.key)).status).toBe(200);
    const [isError, refused] = await call(client, 'svc_invoice_send', { id: other.id });
    expect([isError, refused.code, (refused.details as Body | undefined)?.status]).toEqual([true, 'invalid_request', 'void']);
  });
});
