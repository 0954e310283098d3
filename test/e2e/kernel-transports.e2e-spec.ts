import { Wallet } from 'ethers';
import { randomUUID } from 'node:crypto';
import { createAgent, createPayee, pay, paymentRows, useAgentStack } from '../support/agents';
import { createTestApp, TestApp } from '../support/app';
import { createCheckout, createParties, fundOnChain, indexUntilStatus, TestChain, USDC } from '../support/chain';
import { createOrg } from '../support/factories';
import { callTool, McpClients } from '../support/mcp-client';
import { routeOperation } from '../../src/kernel/http';
import type { Operation } from '../../src/kernel/operation';
import { CheckoutController } from '../../src/modules/checkout/checkout.controller';
import { CREATE_CHECKOUT } from '../../src/modules/checkout/checkout.operations';
import { EscrowController } from '../../src/modules/escrow/escrow.controller';
import { ACT_ON_ESCROW } from '../../src/modules/escrow/escrow.operations';
import { InvoicesController } from '../../src/modules/invoices/invoices.controller';
import { CREATE_INVOICE, SEND_INVOICE } from '../../src/modules/invoices/invoices.operations';
import { OfferingsController } from '../../src/modules/offerings/offerings.controller';
import { CREATE_OFFERING, UPDATE_OFFERING } from '../../src/modules/offerings/offerings.operations';
import { WebhookDeliveriesController, WebhookEndpointsController } from '../../src/modules/webhooks/webhooks.controller';
import { PUT_WEBHOOK_ENDPOINT, RETRY_WEBHOOK_DELIVERY } from '../../src/modules/webhooks/webhooks.operations';
import { A2aOperations } from '../../src/transports/a2a/a2a.operations';
import { CheckoutCreateTool, CreateCheckoutTool } from '../../src/transports/mcp/tools/checkout-create.tool';
import { EscrowAcceptTool, EscrowCancelTool, EscrowDeclineTool, EscrowDisputeTool, EscrowMarkDeliveredTool, EscrowReleaseTool } from '../../src/transports/mcp/tools/escrow-action.tool';
import { InvoiceCreateTool, InvoiceSendTool } from '../../src/transports/mcp/tools/invoice.tool';
import { OfferingCreateTool, OfferingUpdateTool } from '../../src/transports/mcp/tools/offering.tool';
import { WebhookDeliveriesRetryTool } from '../../src/transports/mcp/tools/webhook-deliveries.tool';
import { WebhookEndpointPutTool } from '../../src/transports/mcp/tools/webhook-endpoint.tool';

jest.setTimeout(120_000);

type Body = Record<string, unknown>;
/** The error body without its requestId (which differs per request). */
const errorOf = (body: Body) => ({ error: body.error, code: body.code, details: body.details });

/**
 * One operation, one answer on every transport (DESIGN §17; issue 19): the same refusal body and
 * the same replay on REST, MCP and A2A, through the kernel's one access check, validation and
 * idempotency service.
 */
describe('the kernel: the same operation refused and replayed the same way on REST, MCP and A2A', () => {
  let t: TestApp;
  let chain: TestChain;
  let base: string;
  const mcp = new McpClients(() => `${base}/mcp`);
  afterAll(() => mcp.closeAll()); // before the stack's teardown (after-hooks run in declaration order)
  useAgentStack({ listen: 'any' }, (s) => ({ t, chain, base } = s));

  const a2aSubmit = (key: string, agentKey: string, params: Body, id = 7) =>
    t.http.post('/api/v1/a2a/payment-submitted').set('X-Api-Key', agentKey).set('Idempotency-Key', key).send({ jsonrpc: '2.0', id, params });

  it('policy_denied over the per-transaction limit: REST 403 body == MCP isError structuredContent == A2A JSON-RPC error data, each replayed as it was', async () => {
    const payee = await createPayee(t, chain);
    const agent = await createAgent(t, chain, { float: 20n * USDC, policy: { perTransactionMax: '5.00', dailyLimit: '100.00' } });
    const terms = { to: payee.handle, amount: '6.00' };

    const rest = await pay(t, agent, terms, 'over-rest');
    expect(rest.status).toBe(403);
    expect(rest.body).toMatchObject({ code: 'policy_denied', details: { rule: 'per_transaction_limit' } });
    const restAgain = await pay(t, agent, terms, 'over-rest');
    expect([restAgain.status, restAgain.headers['idempotent-replayed']]).toEqual([403, 'true']);

    const client = await mcp.asKey(agent.key);
    const [isError, viaTool] = await callTool(client, 'svc_pay', { ...terms, idempotencyKey: 'over-mcp' });
    expect(isError).toBe(true);
    expect(errorOf(viaTool)).toEqual(errorOf(rest.body));
    const [, viaToolAgain] = await callTool(client, 'svc_pay', { ...terms, idempotencyKey: 'over-mcp' });
    expect(errorOf(viaToolAgain)).toEqual(errorOf(rest.body));

    const a2a = await a2aSubmit('over-a2a', agent.key, terms);
    expect(a2a.status).toBe(403);
    expect(errorOf(a2a.body.error.data)).toEqual(errorOf(rest.body));
    const a2aAgain = await a2aSubmit('over-a2a', agent.key, terms);
    expect([a2aAgain.status, a2aAgain.headers['idempotent-replayed']]).toEqual([403, 'true']);
    expect(errorOf(a2aAgain.body.error.data)).toEqual(errorOf(rest.body));

    // One operation, one key scope: the REST key's recorded refusal is what MCP answers under that key.
    const [, sharedKey] = await callTool(client, 'svc_pay', { ...terms, idempotencyKey: 'over-rest' });
    expect(errorOf(sharedKey)).toEqual(errorOf(rest.body));
    expect(await paymentRows(t, agent.agentId)).toHaveLength(0);
  });

  it('a finished payment replays as that payment: REST (Idempotent-Replayed: true), then MCP under the same key; another request under it → 422 on both', async () => {
    const payee = await createPayee(t, chain);
    const agent = await createAgent(t, chain, { float: 20n * USDC });
    const first = await pay(t, agent, { to: payee.handle, amount: '1.00' }, 'done-1');
    expect([first.status, first.headers['idempotent-replayed']]).toEqual([200, 'false']);
    const again = await pay(t, agent, { to: payee.handle, amount: '1.00' }, 'done-1');
    expect([again.status, again.headers['idempotent-replayed'], again.body.id]).toEqual([200, 'true', first.body.id]);

    const client = await mcp.asKey(agent.key);
    const [isError, viaTool] = await callTool(client, 'svc_pay', { to: payee.handle, amount: '1.00', idempotencyKey: 'done-1' });
    expect(isError).toBe(false);
    expect(viaTool.id).toBe(first.body.id);

    const other = await pay(t, agent, { to: payee.handle, amount: '2.00' }, 'done-1');
    expect(other.status).toBe(422);
    const [, otherTool] = await callTool(client, 'svc_pay', { to: payee.handle, amount: '2.00', idempotencyKey: 'done-1' });
    expect(errorOf(otherTool)).toEqual(errorOf(other.body));
    expect(await paymentRows(t, agent.agentId)).toHaveLength(1);
  });

  it('missing scope and a bad body answer the same on REST and MCP (one access check, one validation)', async () => {
    const noPay = await createAgent(t, chain, { scopes: ['agent:balance:read'] });
    const rest = await pay(t, noPay, { to: 'anyone', amount: '1.00' }, `k-${randomUUID()}`);
    const client = await mcp.asKey(noPay.key);
    const [, viaTool] = await callTool(client, 'svc_pay', { to: 'anyone', amount: '1.00', idempotencyKey: `k-${randomUUID()}` });
    expect(rest.status).toBe(403);
    expect(errorOf(viaTool)).toEqual(errorOf(rest.body));

    const agent = await createAgent(t, chain);
    const restBad = await t.http.post('/api/v1/payments').set('X-Api-Key', agent.key).set('Idempotency-Key', `k-${randomUUID()}`).send({ to: 'x', amount: '1.00', surprise: 1 });
    const agentClient = await mcp.asKey(agent.key);
    const [, toolBad] = await callTool(agentClient, 'svc_create_escrow', { to: 'x', amount: '1.00', description: 'd', surprise: 1, idempotencyKey: `k-${randomUUID()}` });
    expect(restBad.status).toBe(400);
    expect(restBad.body.details.fields).toEqual([{ param: 'surprise', message: 'property surprise should not exist' }]);
    expect((toolBad.details as Body).fields).toEqual(restBad.body.details.fields);
  });

  it('verification operations are declared once: REST and MCP share the key scope (a REST start replays on MCP) and refuse a bad hash alike', async () => {
    const org = await createOrg(t.app, { payoutAddress: Wallet.createRandom().address });
    const key = `v-${randomUUID()}`;
    const rest = await t.http.post('/api/v1/verification/start').set('X-Api-Key', org.key).set('Idempotency-Key', key).send({});
    expect(rest.status).toBe(200);
    const client = await mcp.asKey(org.key);
    const [isError, viaTool] = await callTool(client, 'svc_verification_start', { idempotencyKey: key });
    expect(isError).toBe(false);
    // The same identity session, not a second one: the tool ran the REST route's operation under its key.
    expect(viaTool).toEqual(rest.body);
    const [, fresh] = await callTool(client, 'svc_verification_start', { idempotencyKey: `v-${randomUUID()}` });
    expect(fresh.verificationUrl).not.toBe(rest.body.verificationUrl);

    const restBad = await t.http.post('/api/v1/verification/confirm').set('X-Api-Key', org.key).set('Idempotency-Key', `v-${randomUUID()}`).send({ txHash: 'not-a-hash' });
    const [toolError, toolBad] = await callTool(client, 'svc_verification_confirm', { txHash: 'not-a-hash', idempotencyKey: `v-${randomUUID()}` });
    expect(restBad.status).toBe(400);
    expect(toolError).toBe(true);
    expect(errorOf(toolBad)).toEqual(errorOf(restBad.body));
  });

  it('every state-changing tool names the declaration its REST route states with @Runs (the same object), so the two cannot drift', () => {
    const pairs: Array<[{ operation: Pick<Operation, 'declaration'> }, object, object]> = [
      [t.app.get(CheckoutCreateTool), CheckoutController.prototype.create, CREATE_CHECKOUT],
      [t.app.get(CreateCheckoutTool), CheckoutController.prototype.create, CREATE_CHECKOUT],
      [t.app.get(EscrowAcceptTool), EscrowController.prototype.accept, ACT_ON_ESCROW.accept],
      [t.app.get(EscrowDeclineTool), EscrowController.prototype.decline, ACT_ON_ESCROW.decline],
      [t.app.get(EscrowMarkDeliveredTool), EscrowController.prototype.markDelivered, ACT_ON_ESCROW['mark-delivered']],
      [t.app.get(EscrowReleaseTool), EscrowController.prototype.release, ACT_ON_ESCROW.release],
      [t.app.get(EscrowCancelTool), EscrowController.prototype.cancel, ACT_ON_ESCROW.cancel],
      [t.app.get(EscrowDisputeTool), EscrowController.prototype.dispute, ACT_ON_ESCROW.dispute],
      [t.app.get(InvoiceCreateTool), InvoicesController.prototype.create, CREATE_INVOICE],
      [t.app.get(InvoiceSendTool), InvoicesController.prototype.send, SEND_INVOICE],
      [t.app.get(OfferingCreateTool), OfferingsController.prototype.create, CREATE_OFFERING],
      [t.app.get(OfferingUpdateTool), OfferingsController.prototype.update, UPDATE_OFFERING],
      [t.app.get(WebhookEndpointPutTool), WebhookEndpointsController.prototype.put, PUT_WEBHOOK_ENDPOINT],
      [t.app.get(WebhookDeliveriesRetryTool), WebhookDeliveriesController.prototype.retry, RETRY_WEBHOOK_DELIVERY],
    ];
    for (const [tool, handler, declared] of pairs) {
      expect(routeOperation(handler)).toBe(declared);
      expect(tool.operation.declaration).toBe(declared);
    }
    // The A2A skill runs the same operation object as the MCP tools.
    expect(t.app.get(A2aOperations).createCheckout).toBe(t.app.get(CheckoutCreateTool).operation);
  });

  it('create-checkout: a key used on REST replays on MCP (both tool names) with the same body; another body under it → 422 on both', async () => {
    const org = await createOrg(t.app);
    const key = `cc-${randomUUID()}`;
    const body = { amount: '12.50', description: 'declared once' };
    const rest = await t.http.post('/api/v1/checkout-sessions').set('X-Api-Key', org.key).set('Idempotency-Key', key).send(body);
    expect([rest.status, rest.headers['idempotent-replayed']]).toEqual([200, 'false']);

    const client = await mcp.asKey(org.key);
    for (const tool of ['svc_checkout_create', 'svc_create_checkout']) {
      const [isError, viaTool] = await callTool(client, tool, { ...body, idempotencyKey: key });
      expect(isError).toBe(false);
      // The session REST created, not a second one.
      expect(viaTool).toEqual(rest.body);
    }
    const [, fresh] = await callTool(client, 'svc_checkout_create', { ...body, idempotencyKey: `cc-${randomUUID()}` });
    expect(fresh.id).not.toBe(rest.body.id);

    const other = await t.http.post('/api/v1/checkout-sessions').set('X-Api-Key', org.key).set('Idempotency-Key', key).send({ ...body, amount: '13.00' });
    expect(other.status).toBe(422);
    const [otherError, otherTool] = await callTool(client, 'svc_create_checkout', { ...body, amount: '13.00', idempotencyKey: key });
    expect(otherError).toBe(true);
    expect(errorOf(otherTool)).toEqual(errorOf(other.body));
    const [{ n }] = (await t.dataSource.query('SELECT count(*)::int AS n FROM checkout_sessions WHERE organization_id = $1', [org.organizationId])) as Array<{ n: number }>;
    expect(n).toBe(2);
  });

  it('put-webhook-endpoint takes no key on either transport (a replay would keep the secret at rest): the same key rotates again and nothing is recorded', async () => {
    const org = await createOrg(t.app);
    const key = `wh-${randomUUID()}`;
    const body = { url: 'http://127.0.0.1:9/hooks', rotateSecret: true };
    const rest = await t.http.put('/api/v1/webhook-endpoints').set('X-Api-Key', org.key).set('Idempotency-Key', key).send(body);
    expect([rest.status, rest.headers['idempotent-replayed']]).toEqual([200, undefined]);
    const client = await mcp.asKey(org.key);
    const [isError, first] = await callTool(client, 'svc_webhook_endpoint_put', { ...body, idempotencyKey: key });
    const [, second] = await callTool(client, 'svc_webhook_endpoint_put', { ...body, idempotencyKey: key });
    expect(isError).toBe(false);
    expect(new Set([rest.body.secret, first.secret, second.secret]).size).toBe(3);
    const [{ n }] = (await t.dataSource.query('SELECT count(*)::int AS n FROM idempotency_records WHERE organization_id = $1', [org.organizationId])) as Array<{ n: number }>;
    expect(n).toBe(0);
  });

  it('an escrow action (accept): the REST answer under a key is what MCP answers under it, though the escrow has moved on since', async () => {
    const { seller, buyer } = await createParties(t, chain);
    const checkout = await createCheckout(t, seller.org, { amount: '10.00' });
    await fundOnChain(t, chain, checkout.id, buyer.wallet);
    const session = await indexUntilStatus(t, seller.org, checkout.id, 'funded');
    const escrow = (await t.http.get(`/api/v1/escrows/${session.escrowId as string}`).set('X-Api-Key', seller.org.key)).body as Body;
    const escrowId = escrow.id as string;
    const escrowKey = (escrow.chain as Body).escrowKey as string;

    const key = `acc-${randomUUID()}`;
    const acceptTx = await chain.act(seller.wallet, 'accept', escrowKey);
    const accepted = await t.http.post(`/api/v1/escrows/${escrowId}/accept`).set('X-Api-Key', seller.org.key).set('Idempotency-Key', key).send({ txHash: acceptTx });
    expect([accepted.status, accepted.body.status]).toEqual([200, 'accepted']);
    const deliveredTx = await chain.act(seller.wallet, 'markDelivered', escrowKey);
    const delivered = await t.http.post(`/api/v1/escrows/${escrowId}/mark-delivered`).set('X-Api-Key', seller.org.key).send({ txHash: deliveredTx });
    expect([delivered.status, delivered.body.status]).toEqual([200, 'delivered']);

    const client = await mcp.asKey(seller.org.key);
    const [isError, viaTool] = await callTool(client, 'svc_escrow_accept', { id: escrowId, txHash: acceptTx, idempotencyKey: key });
    expect(isError).toBe(false);
    // The recorded answer (accepted), not a new run, which would show the escrow as it is now (delivered).
    expect(viaTool).toEqual(accepted.body);
    const [, now] = await callTool(client, 'svc_escrow_accept', { id: escrowId, txHash: acceptTx, idempotencyKey: `acc-${randomUUID()}` });
    expect(now.status).toBe('delivered');

    const [otherError, otherTool] = await callTool(client, 'svc_escrow_accept', { id: escrowId, txHash: deliveredTx, idempotencyKey: key });
    const other = await t.http.post(`/api/v1/escrows/${escrowId}/accept`).set('X-Api-Key', seller.org.key).set('Idempotency-Key', key).send({ txHash: deliveredTx });
    expect([otherError, other.status]).toEqual([true, 422]);
    expect(errorOf(otherTool)).toEqual(errorOf(other.body));
  });
});

describe('the per-credential rate limit covers MCP as it covers REST (RATE_LIMIT_PER_MINUTE=3)', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ RATE_LIMIT_PER_MINUTE: '3' });
  });
  afterAll(async () => {
    await t?.close();
  });

  const toolsCall = (key: string, id: number) =>
    t.http
      .post('/mcp')
      .set('X-Api-Key', key)
      .set('Accept', 'application/json, text/event-stream')
      .send({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'svc_me', arguments: {} } });

  it('past the limit tools/call answers HTTP 429 rate_limited with Retry-After, the body REST answers; the credential has one budget for both', async () => {
    const mcpOrg = await createOrg(t.app);
    for (let i = 1; i <= 3; i++) {
      const res = await toolsCall(mcpOrg.key, i);
      expect(res.status).toBe(200);
      expect(res.headers['ratelimit-policy']).toBe('"default";q=3;w=60');
    }
    const limited = await toolsCall(mcpOrg.key, 4);
    expect(limited.status).toBe(429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);

    const restOrg = await createOrg(t.app);
    for (let i = 0; i < 3; i++) expect((await t.http.get('/api/v1/me').set('X-Api-Key', restOrg.key)).status).toBe(200);
    const restLimited = await t.http.get('/api/v1/me').set('X-Api-Key', restOrg.key);
    expect(restLimited.status).toBe(429);
    expect(errorOf(limited.body)).toEqual(errorOf(restLimited.body));

    // The MCP calls spent the same credential's budget REST counts.
    expect((await t.http.get('/api/v1/me').set('X-Api-Key', mcpOrg.key)).status).toBe(429);
  });
});
