import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { createTestApp, TestApp } from '../support/app';
import { callTool, McpClients, okTool, refusedTool } from '../support/mcp-client';
import { checkoutEvents, createCheckout, createParties, fundOnChain, indexUntilStatus, Party, TestChain } from '../support/chain';
import { WebhookEvent } from '../../src/common/outbox/webhook-event';
import { createAgentKey, createKey, createOAuthClient, createOrg, TestOrg } from '../support/factories';
import { emitEvents } from '../support/webhook-env';

jest.setTimeout(90_000);

type Body = Record<string, unknown>;

/**
 * The MCP interface (docs/architecture.md §15) through the official SDK client
 * (`Client` + `StreamableHTTPClientTransport`) against the real api on a real port, with real
 * Postgres, Redis and anvil: discovery and 401, tools/list per credential, every tool's happy path
 * and refusals, idempotency, parity with REST, and parallel stateless calls.
 */
describe('MCP tools over Streamable HTTP (official client)', () => {
  let t: TestApp;
  let base: string;
  let merchant: TestOrg;
  const mcp = new McpClients(() => `${base}/mcp`);
  const connect = (headers: Record<string, string>) => mcp.connect(headers);
  const asKey = (key: string) => mcp.asKey(key);
  const call = callTool;
  const ok = okTool;
  const refused = refusedTool;

  beforeAll(async () => {
    t = await createTestApp();
    await t.app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}`;
    merchant = await createOrg(t.app);
  });
  afterAll(async () => {
    await mcp.closeAll();
    await t.close();
  });

  describe('discovery and authentication', () => {
    it('answers 401 in our error body with WWW-Authenticate pointing at the protected-resource metadata', async () => {
      const res = await fetch(`${base}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {} }),
      });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer resource_metadata="https://pay.test/.well-known/oauth-protected-resource/mcp"'.replace('https://pay.test', process.env.MCP_BASE_URL ?? 'http://localhost:3000'));
      expect(await res.json()).toEqual({ error: expect.any(String), code: 'unauthorized', requestId: expect.any(String) });
      await expect(connect({ 'X-Api-Key': 'bk_live_unknown' })).rejects.toThrow();
    });

    it('serves RFC 9728 protected-resource and RFC 8414 authorization-server metadata naming /oauth/token', async () => {
      const resource = (await (await fetch(`${base}/.well-known/oauth-protected-resource/mcp`)).json()) as Body;
      expect(resource).toMatchObject({ resource: expect.stringMatching(/\/mcp$/), authorization_servers: [expect.any(String)], bearer_methods_supported: ['header'] });
      expect(resource.scopes_supported).toEqual(expect.arrayContaining(['checkout:write', 'agent:pay']));
      const as = (await (await fetch(`${base}/.well-known/oauth-authorization-server`)).json()) as Body;
      expect(as).toMatchObject({ issuer: (resource.authorization_servers as string[])[0], grant_types_supported: ['client_credentials'] });
      expect(as.token_endpoint).toBe(`${as.issuer as string}/oauth/token`);
    });

    it('answers GET /mcp with 405 (stateless: no stream)', async () => {
      const res = await fetch(`${base}/mcp`, { headers: { 'X-Api-Key': merchant.key } });
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe('POST');
    });
  });

  it('spends the address allowance of failed authentications like REST: 401, then 429 before any lookup', async () => {
    const limited = await createTestApp({ AUTH_FAILURES_PER_MINUTE: '3', REDIS_PREFIX: `${process.env.REDIS_PREFIX}mcplimit` });
    try {
      await limited.app.listen(0, '127.0.0.1');
      const url = `http://127.0.0.1:${(limited.app.getHttpServer().address() as AddressInfo).port}/mcp`;
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) {
        const res = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'x-api-key': `bk_live_guess${i}` },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
        });
        statuses.push(res.status);
        if (res.status === 429) expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
      }
      expect(statuses).toEqual([401, 401, 401, 429, 429]);
    } finally {
      await limited.close();
    }
  });

  describe('tools/list per credential', () => {
    const names = async (client: Client) => (await client.listTools()).tools.map((tool) => tool.name).sort();

    it('a merchant key with every scope sees every merchant tool, with schemas and annotations', async () => {
      const client = await asKey(merchant.key);
      const tools = (await client.listTools()).tools;
      expect(tools.map((x) => x.name).sort()).toEqual(
        [
          'svc_me', 'svc_checkout_create', 'svc_create_checkout', 'svc_checkout_get', 'svc_checkout_list', 'svc_escrow_list', 'svc_escrow_get',
          'svc_escrow_accept', 'svc_escrow_decline', 'svc_escrow_mark_delivered', 'svc_escrow_release', 'svc_escrow_cancel', 'svc_escrow_dispute',
          'svc_webhook_endpoint_get', 'svc_webhook_endpoint_put', 'svc_webhook_deliveries_list', 'svc_webhook_deliveries_retry', 'svc_get_payment_status',
          'svc_verification_get', 'svc_verification_checkout', 'svc_verification_confirm', 'svc_verification_start',
          'svc_offering_create', 'svc_offering_get', 'svc_offering_list', 'svc_offering_update',
          'svc_invoice_create', 'svc_invoice_get', 'svc_invoice_list', 'svc_invoice_send',
          'svc_refund_create', 'svc_refund_get', 'svc_refund_list', 'svc_refund_submit', 'svc_refund_cancel',
          'svc_balance_transaction_list',
        ].sort(),
      );
      expect(await ok(client, 'svc_balance_transaction_list', { limit: 5, type: 'payment' })).toEqual({ data: [], hasMore: false, nextCursor: null });
      const balance = tools.find((x) => x.name === 'svc_balance_transaction_list')!;
      expect(Object.keys(balance.inputSchema.properties ?? {})).toEqual(expect.arrayContaining(['type', 'created[gte]', 'created[lt]', 'starting_after']));
      const release = tools.find((x) => x.name === 'svc_escrow_release')!;
      expect(release.annotations).toMatchObject({ destructiveHint: true, idempotentHint: true, readOnlyHint: false });
      expect(release.inputSchema.required).toEqual(expect.arrayContaining(['id', 'txHash', 'idempotencyKey']));
      expect(Object.keys(release.inputSchema.properties ?? {})).toEqual(expect.arrayContaining(['confirm']));
      expect(tools.find((x) => x.name === 'svc_checkout_list')!.annotations).toMatchObject({ readOnlyHint: true });
    });

    it('a merchant key with only checkout:read sees only what it may call', async () => {
      const client = await asKey(await createKey(t.app, merchant.organizationId, ['checkout:read']));
      expect(await names(client)).toEqual(['svc_checkout_get', 'svc_checkout_list', 'svc_get_payment_status', 'svc_me']);
    });

    it('an agent key sees the tools its scopes allow', async () => {
      const agent = await createAgentKey(t.app, merchant.organizationId, ['agent:pay', 'checkout:read']);
      expect(await names(await asKey(agent.key))).toEqual(['svc_agent_get', 'svc_checkout_get', 'svc_checkout_list', 'svc_get_payment_status', 'svc_me', 'svc_pay']);
    });

    it('a bat_ token (client credentials) works as Bearer and is limited to its scopes', async () => {
      const oauth = await createOAuthClient(t.app, merchant.organizationId, ['checkout:read', 'checkout:write']);
      const token = await t.http.post('/oauth/token').send({ grant_type: 'client_credentials', client_id: oauth.clientId, client_secret: oauth.clientSecret });
      expect(token.status).toBe(200);
      const client = await connect({ Authorization: `Bearer ${token.body.access_token as string}` });
      expect(await names(client)).toEqual(['svc_checkout_create', 'svc_checkout_get', 'svc_checkout_list', 'svc_create_checkout', 'svc_get_payment_status', 'svc_me']);
      expect(await ok(client, 'svc_me')).toMatchObject({ identity: { type: 'oauth' }, organization: { id: merchant.organizationId } });
    });
  });

  describe('checkout, identity and webhook tools', () => {
    it('svc_me, svc_checkout_create/get/list and svc_create_checkout answer the REST bodies', async () => {
      const client = await asKey(merchant.key);
      expect(await ok(client, 'svc_me')).toMatchObject({ organization: { id: merchant.organizationId }, identity: { type: 'merchant' } });
      const created = await ok(client, 'svc_checkout_create', { amount: '12.5', description: 'MCP mug', orderId: 'mcp-1' });
      expect(created).toMatchObject({ amount: '12.50', status: 'open', settlement: 'escrow', orderId: 'mcp-1' });
      const alias = await ok(client, 'svc_create_checkout', { amount: '3', description: 'alias' });
      expect(alias).toMatchObject({ amount: '3.00', status: 'open' });
      expect(await ok(client, 'svc_checkout_get', { id: created.id })).toEqual(created);
      const page = await ok(client, 'svc_checkout_list', { limit: 2 });
      expect((page.data as Body[]).map((s) => s.id)).toEqual([alias.id, created.id]);
      expect(await ok(client, 'svc_get_payment_status', { checkoutSessionId: created.id })).toEqual({ checkoutSession: created, status: 'open', escrow: null });
    });

    it('a tool and its REST twin produce the same record and the same error body', async () => {
      const client = await asKey(merchant.key);
      const viaTool = await ok(client, 'svc_checkout_create', { amount: '7.25', description: 'twin' });
      const viaRest = await t.http.get(`/api/v1/checkout-sessions/${viaTool.id as string}`).set('X-Api-Key', merchant.key);
      expect(viaRest.body).toEqual(viaTool);
      const bad = { amount: '1e5', description: 'x' };
      const rest = await t.http.post('/api/v1/checkout-sessions').set('X-Api-Key', merchant.key).send(bad);
      const [, tool] = await call(client, 'svc_checkout_create', bad);
      expect(rest.status).toBe(400);
      const { requestId: _a, ...restBody } = rest.body as Body;
      const { requestId: _b, ...toolBody } = tool;
      expect(toolBody).toEqual(restBody);
      const missing = await t.http.get(`/api/v1/checkout-sessions/${randomUUID()}`).set('X-Api-Key', merchant.key);
      const [, toolMissing] = await call(client, 'svc_checkout_get', { id: randomUUID() });
      expect({ ...toolMissing, requestId: null }).toEqual({ ...missing.body, requestId: null });
    });

    it('replays the first result for the same idempotencyKey, and refuses other arguments with 422 idempotency_conflict', async () => {
      const client = await asKey(merchant.key);
      const key = `mcp-${randomUUID()}`;
      const first = await ok(client, 'svc_checkout_create', { amount: '5.00', description: 'once', idempotencyKey: key });
      const again = await ok(client, 'svc_checkout_create', { amount: '5.00', description: 'once', idempotencyKey: key });
      expect(again).toEqual(first);
      const conflict = await refused(client, 'svc_checkout_create', { amount: '6.00', description: 'once', idempotencyKey: key }, 'idempotency_conflict');
      expect(conflict.details).toEqual({ reason: 'payload_mismatch' });
      const count = await t.dataSource.query(`SELECT count(*)::int AS n FROM checkout_sessions WHERE organization_id = $1 AND description = 'once'`, [merchant.organizationId]);
      expect(count[0].n).toBe(1);
    });

    it('refuses a hidden tool with missing_scope, bad input with invalid_request fields, unknown tools with not_found', async () => {
      const readOnly = await asKey(await createKey(t.app, merchant.organizationId, ['checkout:read']));
      const scope = await refused(readOnly, 'svc_checkout_create', { amount: '1.00', description: 'x' }, 'missing_scope');
      expect(scope.details).toEqual({ required: ['checkout:write'], granted: ['checkout:read'] });
      const client = await asKey(merchant.key);
      const invalid = await refused(client, 'svc_checkout_create', { amount: 12, description: 'x' }, 'invalid_request');
      // The kernel's validation is the one check (issue 31): the fields and messages REST gives for the same body.
      const invalidRest = await t.http.post('/api/v1/checkout-sessions').set('X-Api-Key', merchant.key).send({ amount: 12, description: 'x' });
      expect(invalidRest.status).toBe(400);
      expect(invalid.details).toEqual(invalidRest.body.details);
      expect((invalid.details as { fields: Array<{ param: string }> }).fields.map((f) => f.param)).toContain('amount');
      const extra = await refused(client, 'svc_checkout_list', { limit: 500 }, 'invalid_request');
      expect(extra.details).toEqual({ fields: [{ param: 'limit', message: 'limit must be an integer from 1 to 100' }] });
      await refused(client, 'svc_nope', {}, 'not_found');
      await refused(client, 'svc_get_payment_status', {}, 'invalid_request');
    });

    it('svc_webhook_endpoint_put/get, svc_webhook_deliveries_list/retry', async () => {
      const org = await createOrg(t.app);
      const client = await asKey(org.key);
      await refused(client, 'svc_webhook_endpoint_get', {}, 'not_found');
      const put = await ok(client, 'svc_webhook_endpoint_put', { url: 'http://127.0.0.1:9/hooks' });
      expect(put).toMatchObject({ url: 'http://127.0.0.1:9/hooks', enabled: true, secret: expect.stringMatching(/^whsec_/) });
      const got = await ok(client, 'svc_webhook_endpoint_get');
      expect(got.secret).toBeUndefined();
      expect(got.id).toBe(put.id);
      expect(await ok(client, 'svc_webhook_deliveries_list')).toEqual({ data: [], hasMore: false, nextCursor: null });
      await refused(client, 'svc_webhook_deliveries_retry', { id: randomUUID() }, 'not_found');

      // A failed delivery (as the worker's relay and sender leave it), listed and retried through the tools.
      const [eventId] = await emitEvents(t.app, org.organizationId, [{ type: WebhookEvent.CheckoutFunded, object: { id: randomUUID() } }]);
      const deliveryId = randomUUID();
      await t.dataSource.query(
        `INSERT INTO webhook_deliveries (id, event_id, organization_id, event_type, url, status, attempts, target, last_error)
         VALUES ($1, $2, $3, 'checkout.funded', 'http://127.0.0.1:9/hooks', 'failed', 10, 'endpoint', 'connect ECONNREFUSED')`,
        [deliveryId, eventId, org.organizationId],
      );
      const listed = await ok(client, 'svc_webhook_deliveries_list', { status: 'failed' });
      expect((listed.data as Body[]).map((d) => [d.id, d.status])).toEqual([[deliveryId, 'failed']]);
      const retried = await ok(client, 'svc_webhook_deliveries_retry', { id: deliveryId });
      expect(retried).toMatchObject({ id: deliveryId, eventId, status: 'pending' });
      const rest = await t.http.get('/api/v1/webhook-deliveries').set('X-Api-Key', org.key);
      expect((rest.body.data as Body[]).find((d) => d.id === deliveryId)).toEqual(retried);
    });

    it('20 parallel tool calls with different credentials on the stateless endpoint never cross', async () => {
      const orgs = await Promise.all(Array.from({ length: 20 }, () => createOrg(t.app)));
      const results = await Promise.all(
        orgs.map(async (org, i) => {
          const client = await asKey(org.key);
          const [me, created] = await Promise.all([ok(client, 'svc_me'), ok(client, 'svc_checkout_create', { amount: `${i + 1}.00`, description: `parallel ${i}` })]);
          const list = await ok(client, 'svc_checkout_list');
          return { org, me, created, list };
        }),
      );
      for (const [i, r] of results.entries()) {
        expect((r.me.organization as Body).id).toBe(r.org.organizationId);
        expect(r.created.amount).toBe(`${i + 1}.00`);
        expect((r.list.data as Body[]).map((s) => s.id)).toEqual([r.created.id]);
      }
    });
  });

  describe('escrow tools on the real chain', () => {
    let chain: TestChain;
    let seller: Party;
    let buyer: Party;
    beforeAll(async () => {
      chain = new TestChain();
      ({ seller, buyer } = await createParties(t, chain));
    });
    afterAll(() => chain.close());

    async function funded(): Promise<{ checkoutId: string; escrowId: string; escrowKey: string }> {
      const checkout = await createCheckout(t, seller.org, { amount: '10.00' });
      await fundOnChain(t, chain, checkout.id, buyer.wallet);
      const session = await indexUntilStatus(t, seller.org, checkout.id, 'funded');
      const escrow = await t.http.get(`/api/v1/escrows/${session.escrowId as string}`).set('X-Api-Key', seller.org.key);
      return { checkoutId: checkout.id, escrowId: escrow.body.id as string, escrowKey: (escrow.body.chain as Body).escrowKey as string };
    }

    it('accept → mark_delivered → release through tools, with list, get and payment status', async () => {
      const sellerTools = await asKey(seller.org.key);
      const buyerTools = await asKey(buyer.org.key);
      const { checkoutId, escrowId, escrowKey } = await funded();
      expect(((await ok(sellerTools, 'svc_escrow_list', { role: 'seller' })).data as Body[]).map((e) => e.id)).toContain(escrowId);
      expect(await ok(buyerTools, 'svc_escrow_get', { id: escrowId })).toMatchObject({ id: escrowId, status: 'funded', role: 'buyer' });

      expect(await ok(sellerTools, 'svc_escrow_accept', { id: escrowId, txHash: await chain.act(seller.wallet, 'accept', escrowKey) })).toMatchObject({ status: 'accepted' });
      const deliveredTx = await chain.act(seller.wallet, 'markDelivered', escrowKey);
      expect(await ok(sellerTools, 'svc_escrow_mark_delivered', { id: escrowId, txHash: deliveredTx })).toMatchObject({ status: 'delivered' });

      const releaseTx = await chain.act(buyer.wallet, 'release', escrowKey);
      await refused(buyerTools, 'svc_escrow_release', { id: escrowId, txHash: releaseTx, confirm: true }, 'idempotency_required');
      await refused(buyerTools, 'svc_escrow_release', { id: escrowId, txHash: releaseTx, idempotencyKey: `r-${randomUUID()}` }, 'confirm_required');
      await refused(sellerTools, 'svc_escrow_release', { id: escrowId, txHash: releaseTx, confirm: true, idempotencyKey: `r-${randomUUID()}` }, 'forbidden');
      const key = `release-${randomUUID()}`;
      const released = await ok(buyerTools, 'svc_escrow_release', { id: escrowId, txHash: releaseTx, confirm: true, idempotencyKey: key });
      expect(released).toMatchObject({ status: 'released' });
      expect(await ok(buyerTools, 'svc_escrow_release', { id: escrowId, txHash: releaseTx, confirm: true, idempotencyKey: key })).toEqual(released);
      const status = await ok(sellerTools, 'svc_get_payment_status', { checkoutSessionId: checkoutId });
      expect(status).toMatchObject({ status: 'released', escrow: { id: escrowId, status: 'released' } });
      expect((await checkoutEvents(t, checkoutId)).map((e) => e.type)).toEqual(['checkout.funded', 'checkout.accepted', 'checkout.released', 'checkout.paid']);
    });

    it('cancel (buyer), decline (seller) and dispute (party) through tools', async () => {
      const sellerTools = await asKey(seller.org.key);
      const buyerTools = await asKey(buyer.org.key);
      const a = await funded();
      const cancelTx = await chain.act(buyer.wallet, 'cancel', a.escrowKey);
      expect(await ok(buyerTools, 'svc_escrow_cancel', { id: a.escrowId, txHash: cancelTx, idempotencyKey: `c-${randomUUID()}` })).toMatchObject({ status: 'cancelled' });

      const b = await funded();
      const declineTx = await chain.act(seller.wallet, 'decline', b.escrowKey);
      expect(await ok(sellerTools, 'svc_escrow_decline', { id: b.escrowId, txHash: declineTx, idempotencyKey: `d-${randomUUID()}` })).toMatchObject({ status: 'refunded' });

      const c = await funded();
      await ok(sellerTools, 'svc_escrow_accept', { id: c.escrowId, txHash: await chain.act(seller.wallet, 'accept', c.escrowKey) });
      const disputeTx = await chain.act(buyer.wallet, 'dispute', c.escrowKey);
      await refused(buyerTools, 'svc_escrow_dispute', { id: c.escrowId, txHash: disputeTx, idempotencyKey: `x-${randomUUID()}` }, 'confirm_required');
      expect(await ok(buyerTools, 'svc_escrow_dispute', { id: c.escrowId, txHash: disputeTx, confirm: true, idempotencyKey: `x-${randomUUID()}` })).toMatchObject({ status: 'disputed' });
    });
  });
});
