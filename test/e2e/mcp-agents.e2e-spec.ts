import type { INestApplicationContext } from '@nestjs/common';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { escrowKeyFromId } from '@lib/chain';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { AgentsService } from '../../src/modules/agents/agents.service';
import { createAgent, createPayee, pay, paymentRows, settleUntil, startRelayerWorker, TestAgent } from '../support/agents';
import { createTestApp, TestApp } from '../support/app';
import { callTool, McpClients, okTool, refusedTool } from '../support/mcp-client';
import { indexUntilStatus, TestChain, USDC } from '../support/chain';
import { createOrg, TestOrg } from '../support/factories';

jest.setTimeout(120_000);

type Body = Record<string, unknown>;

/**
 * The agent tools of the MCP server (docs/architecture.md §15: svc_pay, svc_create_escrow,
 * svc_get_balance, svc_agent_get, svc_get_payment_status {paymentId}) through the official SDK
 * client against the real api on a real port, with real Postgres, Redis, anvil and the relayer
 * worker: visibility per credential, the spend's own idempotency (UNIQUE(agent, key)) reached
 * through `idempotencyKey`, the REST refusal codes, and parity with the REST bodies.
 */
describe('MCP agent tools (official client)', () => {
  let t: TestApp;
  let chain: TestChain;
  let worker: INestApplicationContext;
  let base: string;
  let merchant: TestOrg;
  const mcp = new McpClients(() => `${base}/mcp`);
  const asKey = (key: string) => mcp.asKey(key);
  const call = callTool;
  const ok = okTool;
  const refused = refusedTool;
  const names = async (client: Client) => (await client.listTools()).tools.map((x) => x.name).sort();
  const rest = (agent: TestAgent, path: string) => t.http.get(path).set('X-Api-Key', agent.key);
  /** The error body without its requestId (which differs per request). */
  const errorOf = (body: Body) => ({ code: body.code, error: body.error, details: body.details });

  beforeAll(async () => {
    t = await createTestApp();
    chain = new TestChain();
    worker = await startRelayerWorker();
    await t.app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}`;
    merchant = await createOrg(t.app);
  });
  afterAll(async () => {
    await mcp.closeAll();
    await worker?.close();
    await t?.close();
    chain?.close();
  });

  describe('tools/list', () => {
    it('an agent key sees exactly the agent tools its scopes allow; a merchant key sees none of them', async () => {
      const full = await createAgent(t, chain, { scopes: ['agent:pay', 'agent:balance:read', 'agent:escrow:fund'] });
      const fullClient = await asKey(full.key);
      expect(await names(fullClient)).toEqual(['svc_agent_get', 'svc_create_escrow', 'svc_get_balance', 'svc_get_payment_status', 'svc_me', 'svc_pay']);
      const balanceOnly = await createAgent(t, chain, { scopes: ['agent:balance:read'] });
      expect(await names(await asKey(balanceOnly.key))).toEqual(['svc_agent_get', 'svc_get_balance', 'svc_get_payment_status', 'svc_me']);
      const payOnly = await createAgent(t, chain, { scopes: ['agent:pay'] });
      expect(await names(await asKey(payOnly.key))).toEqual(['svc_agent_get', 'svc_get_payment_status', 'svc_me', 'svc_pay']);
      const merchantNames = await names(await asKey(merchant.key));
      for (const agentTool of ['svc_pay', 'svc_create_escrow', 'svc_get_balance', 'svc_agent_get']) expect(merchantNames).not.toContain(agentTool);

      const tools = (await fullClient.listTools()).tools;
      const payTool = tools.find((x) => x.name === 'svc_pay')!;
      expect(payTool.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true, openWorldHint: true });
      expect(payTool.inputSchema.required).toEqual(expect.arrayContaining(['to', 'amount', 'idempotencyKey']));
      const escrowTool = tools.find((x) => x.name === 'svc_create_escrow')!;
      expect(escrowTool.inputSchema.required).toEqual(expect.arrayContaining(['to', 'amount', 'description', 'idempotencyKey']));
      expect(tools.find((x) => x.name === 'svc_get_balance')!.annotations).toMatchObject({ readOnlyHint: true });
      expect(Object.keys(tools.find((x) => x.name === 'svc_get_payment_status')!.inputSchema.properties ?? {}).sort()).toEqual(['checkoutSessionId', 'paymentId']);
    });

    it('a hidden agent tool called anyway answers as REST: missing_scope for a merchant key (as POST /payments), forbidden where no scope is needed (GET /agent)', async () => {
      const client = await asKey(merchant.key);
      const viaTool = await refused(client, 'svc_pay', { to: 'anyone', amount: '1.00', idempotencyKey: `k-${randomUUID()}` }, 'missing_scope');
      const viaRest = await t.http.post('/api/v1/payments').set('X-Api-Key', merchant.key).set('Idempotency-Key', `k-${randomUUID()}`).send({ to: 'anyone', amount: '1.00' });
      expect(viaRest.body.code).toBe('missing_scope');
      expect((viaTool.details as Body).required).toEqual(viaRest.body.details.required);
      await refused(client, 'svc_get_balance', {}, 'missing_scope');
      await refused(client, 'svc_create_escrow', { to: 'x', amount: '1.00', description: 'd', idempotencyKey: 'k' }, 'missing_scope');
      const forbidden = await refused(client, 'svc_agent_get', {}, 'forbidden');
      expect(forbidden.details).toEqual({ reason: 'agent_key_required' });
      const agentGet = await t.http.get('/api/v1/agent').set('X-Api-Key', merchant.key);
      expect(agentGet.body.code).toBe('forbidden');
      // svc_get_payment_status {paymentId} runs GET /payments/{id}'s declaration (issue 31), so it answers as that route:
      // a payee organisation may read payments (refund:read, DESIGN §21), and one it did not receive is not found.
      const id = randomUUID();
      const status = await refused(client, 'svc_get_payment_status', { paymentId: id }, 'not_found');
      const statusRest = await t.http.get(`/api/v1/payments/${id}`).set('X-Api-Key', merchant.key);
      expect([statusRest.status, statusRest.body.code]).toEqual([404, 'not_found']);
      expect(status.error).toBe(statusRest.body.error);
      const noScope = await createAgent(t, chain, { scopes: ['agent:escrow:fund'] });
      const noScopeTool = await refused(await asKey(noScope.key), 'svc_get_payment_status', { paymentId: id }, 'missing_scope');
      const noScopeRest = await t.http.get(`/api/v1/payments/${id}`).set('X-Api-Key', noScope.key);
      expect([noScopeRest.status, noScopeTool.details]).toEqual([403, noScopeRest.body.details]);
    });
  });

  describe('svc_pay', () => {
    it('pays like POST /payments: submitted, then succeeded on chain; a replay (sequential, concurrent, or over REST) with the same key returns the same payment', async () => {
      const payee = await createPayee(t, chain);
      const agent = await createAgent(t, chain, { float: 100n * USDC, policy: { dailyLimit: '100.00' } });
      const client = await asKey(agent.key);
      const key = `mcp-pay-${randomUUID()}`;
      const paid = await ok(client, 'svc_pay', { to: payee.handle, amount: '12.5', idempotencyKey: key });
      expect(paid).toMatchObject({ status: 'submitted', to: payee.handle, toAddress: payee.address, amount: '12.50', fee: '0.00', mode: 'instant' });
      expect((await rest(agent, `/api/v1/payments/${paid.id as string}`)).body).toEqual(paid);

      const again = await ok(client, 'svc_pay', { to: payee.handle, amount: '12.5', idempotencyKey: key });
      expect(again.id).toBe(paid.id);
      const twins = await Promise.all(Array.from({ length: 6 }, async () => ok(await asKey(agent.key), 'svc_pay', { to: payee.handle, amount: '12.50', idempotencyKey: key })));
      expect(new Set(twins.map((b) => b.id))).toEqual(new Set([paid.id]));
      const overRest = await pay(t, agent, { to: payee.handle, amount: '12.50' }, key);
      expect([overRest.status, overRest.body.id]).toEqual([200, paid.id]);
      const conflict = await refused(client, 'svc_pay', { to: payee.handle, amount: '13.00', idempotencyKey: key }, 'idempotency_conflict');
      expect(conflict.details).toEqual({ reason: 'payload_mismatch' });
      expect(await paymentRows(t, agent.agentId)).toHaveLength(1);

      await settleUntil(t, async () => (await ok(client, 'svc_get_payment_status', { paymentId: paid.id })).status === 'succeeded');
      const status = await ok(client, 'svc_get_payment_status', { paymentId: paid.id });
      expect(status).toMatchObject({ id: paid.id, status: 'succeeded', txHash: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
      expect((await rest(agent, `/api/v1/payments/${paid.id as string}`)).body).toEqual(status);
      expect(await chain.usdcBalance(payee.address)).toBe(12_500_000n);
      expect(await chain.usdcBalance(agent.signerAddress)).toBe(87_500_000n);
      // The key is the payment's own (not a cached MCP answer): a replay now shows it succeeded, as REST's replay does.
      expect(await ok(client, 'svc_pay', { to: payee.handle, amount: '12.50', idempotencyKey: key })).toEqual(status);
      expect(await paymentRows(t, agent.agentId)).toHaveLength(1);
    });

    it('refuses with the REST codes and bodies: idempotency_required, policy_denied daily_limit (stored for the key), signer_required, agent_paused; no payment is made', async () => {
      const payee = await createPayee(t, chain);
      const agent = await createAgent(t, chain, { float: 100n * USDC, policy: { dailyLimit: '10.00' } });
      const client = await asKey(agent.key);

      const noKey = await refused(client, 'svc_pay', { to: payee.handle, amount: '1.00' }, 'idempotency_required');
      expect(noKey.details).toEqual({ fields: [{ param: 'idempotencyKey', message: 'is required' }] });
      await refused(client, 'svc_pay', { to: payee.handle, amount: '1.00', idempotencyKey: '' }, 'invalid_request');

      const overKey = `over-${randomUUID()}`;
      const over = await refused(client, 'svc_pay', { to: payee.handle, amount: '11.00', idempotencyKey: overKey }, 'policy_denied');
      expect(over.details).toMatchObject({ rule: 'daily_limit', limit: '10.00', used: '0.00', requested: '11.00' });
      const overRest = await pay(t, agent, { to: payee.handle, amount: '11.00' });
      expect([overRest.status, errorOf(overRest.body)]).toEqual([403, errorOf(over)]);
      // The refusal is stored for the key: raising the limit does not turn the same key into a payment.
      await t.app.get(AgentsService).setPolicy(agent.agentId, { dailyLimit: '100.00' });
      expect(errorOf(await refused(client, 'svc_pay', { to: payee.handle, amount: '11.00', idempotencyKey: overKey }, 'policy_denied'))).toEqual(errorOf(over));
      await refused(client, 'svc_pay', { to: 'no-such-handle-xyz', amount: '1.00', idempotencyKey: `u-${randomUUID()}` }, 'invalid_request');
      await refused(client, 'svc_pay', { to: payee.handle, amount: '1.0000001', idempotencyKey: `a-${randomUUID()}` }, 'invalid_request');
      await refused(client, 'svc_pay', { to: payee.handle, amount: '1.00', extra: true, idempotencyKey: `e-${randomUUID()}` }, 'invalid_request');

      await t.app.get(AgentsService).setPaused(agent.agentId, true);
      const paused = await refused(client, 'svc_pay', { to: payee.handle, amount: '1.00', idempotencyKey: `p-${randomUUID()}` }, 'agent_paused');
      expect(paused.details).toEqual({ agentId: agent.agentId });
      expect(await paymentRows(t, agent.agentId)).toEqual([]);

      const noSigner = await createAgent(t, chain, { enable: false });
      const unsigned = await refused(await asKey(noSigner.key), 'svc_pay', { to: payee.handle, amount: '1.00', idempotencyKey: `s-${randomUUID()}` }, 'signer_required');
      const unsignedRest = await pay(t, noSigner, { to: payee.handle, amount: '1.00' });
      expect([unsignedRest.status, errorOf(unsignedRest.body)]).toEqual([403, errorOf(unsigned)]);
      expect(await paymentRows(t, noSigner.agentId)).toEqual([]);
      expect(await chain.usdcBalance(payee.address)).toBe(0n);
    });

    it('overspend under concurrency: daily limit 30.00, six concurrent 10.00 svc_pay calls with distinct keys → three payments, three policy_denied', async () => {
      const payee = await createPayee(t, chain);
      const agent = await createAgent(t, chain, { float: 100n * USDC, policy: { dailyLimit: '30.00' } });
      const results = await Promise.all(
        Array.from({ length: 6 }, async (_, i) => call(await asKey(agent.key), 'svc_pay', { to: payee.handle, amount: '10.00', idempotencyKey: `c-${i}-${randomUUID()}` })),
      );
      expect(results.filter(([isError]) => !isError)).toHaveLength(3);
      const denied = results.filter(([isError]) => isError).map(([, body]) => [body.code, (body.details as Body).rule]);
      expect(denied).toEqual(Array(3).fill(['policy_denied', 'daily_limit']));
      await settleUntil(t, async () => (await paymentRows(t, agent.agentId)).every((p) => p.status === 'succeeded'));
      expect(await paymentRows(t, agent.agentId)).toHaveLength(3);
      expect(await chain.usdcBalance(payee.address)).toBe(30n * USDC);
    });
  });

  describe('reads', () => {
    it('svc_get_balance and svc_agent_get answer the REST bodies of GET /balance and GET /agent', async () => {
      const agent = await createAgent(t, chain, { float: 40n * USDC, policy: { dailyLimit: '50.00' } });
      const client = await asKey(agent.key);
      const balance = await ok(client, 'svc_get_balance');
      expect(balance).toMatchObject({ address: agent.signerAddress, balance: '40.00', onChainBalance: '40.00', currency: 'USDC' });
      expect((await rest(agent, '/api/v1/balance')).body).toEqual(balance);
      const me = await ok(client, 'svc_agent_get');
      expect(me).toMatchObject({ id: agent.agentId, slug: agent.slug, signer: { enabled: true, address: agent.signerAddress }, usage: { usedToday: '0.00' } });
      expect((await rest(agent, '/api/v1/agent')).body).toEqual(me);

      const payOnly = await createAgent(t, chain, { scopes: ['agent:pay'] });
      const noScope = await refused(await asKey(payOnly.key), 'svc_get_balance', {}, 'missing_scope');
      const noScopeRest = await rest(payOnly, '/api/v1/balance');
      expect([noScopeRest.status, noScopeRest.body.code, noScopeRest.body.details.required]).toEqual([403, 'missing_scope', (noScope.details as Body).required]);
    });

    it('svc_get_payment_status takes exactly one of paymentId and checkoutSessionId; another agent’s payment is not found', async () => {
      const payee = await createPayee(t, chain);
      const agent = await createAgent(t, chain, { float: 10n * USDC });
      const paid = await pay(t, agent, { to: payee.handle, amount: '2.00' });
      expect(paid.status).toBe(200);
      const client = await asKey(agent.key);
      expect(await ok(client, 'svc_get_payment_status', { paymentId: paid.body.id })).toMatchObject({ id: paid.body.id, amount: '2.00', mode: 'instant' });
      const neither = await refused(client, 'svc_get_payment_status', {}, 'invalid_request');
      expect(neither.details).toEqual({ fields: [{ param: 'paymentId', message: 'give exactly one of paymentId and checkoutSessionId' }] });
      await refused(client, 'svc_get_payment_status', { paymentId: paid.body.id, checkoutSessionId: randomUUID() }, 'invalid_request');
      const other = await createAgent(t, chain);
      await refused(await asKey(other.key), 'svc_get_payment_status', { paymentId: paid.body.id }, 'not_found');
      await refused(client, 'svc_get_payment_status', { paymentId: 'not-a-uuid' }, 'not_found');
      await refused(client, 'svc_get_payment_status', { checkoutSessionId: randomUUID() }, 'missing_scope');
    });
  });

  describe('svc_create_escrow', () => {
    it('opens an escrow like POST /agent-escrows: funded on chain with the signer as buyer; the same key returns the same escrow; refusals as REST', async () => {
      const wallet = await chain.wallet();
      const handle = `seller-${randomUUID().slice(0, 8)}`;
      const seller = await createOrg(t.app, { payoutAddress: wallet.address, handle });
      const agent = await createAgent(t, chain, { float: 50n * USDC, policy: { dailyLimit: '30.00' } });
      const client = await asKey(agent.key);
      const key = `mcp-esc-${randomUUID()}`;
      const args = { to: handle, amount: '25.00', description: 'Logo design', escrowTemplateId: 'digital', idempotencyKey: key };
      const created = await ok(client, 'svc_create_escrow', args);
      expect(created).toMatchObject({ status: 'submitted', to: handle, toAddress: wallet.address, amount: '25.00', escrowStatus: 'open', checkoutSessionId: expect.any(String) });
      const replays = await Promise.all(Array.from({ length: 4 }, async () => ok(await asKey(agent.key), 'svc_create_escrow', args)));
      expect(new Set(replays.map((b) => b.id))).toEqual(new Set([created.id]));
      expect(await paymentRows(t, agent.agentId)).toHaveLength(1);

      const checkoutId = created.checkoutSessionId as string;
      await indexUntilStatus(t, seller, checkoutId, 'funded');
      expect(await chain.gateway.getOnChainEscrow(escrowKeyFromId(checkoutId))).toMatchObject({ state: 'funded', buyer: agent.signerAddress, seller: wallet.address, amount: 25n * USDC });
      await settleUntil(t, async () => (await ok(client, 'svc_get_payment_status', { paymentId: created.id })).status === 'succeeded');
      expect((await rest(agent, `/api/v1/agent-escrows/${created.id as string}`)).body).toMatchObject({ id: created.id, status: 'succeeded', escrowStatus: 'funded' });

      const { idempotencyKey: _k, ...noKey } = args;
      await refused(client, 'svc_create_escrow', noKey, 'idempotency_required');
      const over = await refused(client, 'svc_create_escrow', { ...args, amount: '10.00', idempotencyKey: `o-${randomUUID()}` }, 'policy_denied');
      expect(over.details).toMatchObject({ rule: 'daily_limit', used: '25.00' });
      const other = await createAgent(t, chain);
      const toAgent = await refused(client, 'svc_create_escrow', { ...args, to: other.slug, amount: '1.00', idempotencyKey: `a-${randomUUID()}` }, 'invalid_request');
      expect(toAgent.details).toMatchObject({ reason: 'not_an_organization' });
      await refused(client, 'svc_create_escrow', { ...args, escrowTemplateId: 'bogus', idempotencyKey: `b-${randomUUID()}` }, 'invalid_request');
      expect(await paymentRows(t, agent.agentId)).toHaveLength(1);
    });
  });
});
