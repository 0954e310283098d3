import type { INestApplicationContext } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { createTestApp, TestApp } from '../support/app';
import { callTool, McpClients, okTool } from '../support/mcp-client';
import { createAgent, createPayee, paymentRows, settleUntil, startRelayerWorker } from '../support/agents';
import { TestChain, USDC } from '../support/chain';
import { createOrg } from '../support/factories';

jest.setTimeout(90_000);

type Body = Record<string, unknown>;

/**
 * The agent tools (docs/architecture.md §13, §15) through the official MCP client against the real
 * api, relayer worker and anvil: listed for agent keys only, svc_pay pays on chain under the
 * policy with the payment's own idempotency, refusals carry the REST codes.
 */
describe('MCP agent tools', () => {
  let t: TestApp;
  let chain: TestChain;
  let worker: INestApplicationContext;
  let base: string;
  const mcp = new McpClients(() => `${base}/mcp`);

  beforeAll(async () => {
    t = await createTestApp();
    chain = new TestChain();
    worker = await startRelayerWorker();
    await t.app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await mcp.closeAll();
    await worker?.close();
    chain?.close();
    await t?.close();
  });

  const connect = (key: string) => mcp.asKey(key);
  const call = callTool;
  const ok = okTool;

  it('lists the agent tools for an agent key by its scopes, and none of them for a merchant key', async () => {
    const agent = await createAgent(t, chain);
    const agentTools = (await (await connect(agent.key)).listTools()).tools.map((x) => x.name);
    expect(agentTools).toEqual(expect.arrayContaining(['svc_agent_get', 'svc_get_balance', 'svc_pay', 'svc_create_escrow', 'svc_get_payment_status']));
    const payOnly = await createAgent(t, chain, { scopes: ['agent:pay'] });
    const limited = (await (await connect(payOnly.key)).listTools()).tools.map((x) => x.name);
    expect(limited).toContain('svc_pay');
    expect(limited).not.toContain('svc_get_balance');
    expect(limited).not.toContain('svc_create_escrow');
    const merchant = await createOrg(t.app);
    const merchantTools = (await (await connect(merchant.key)).listTools()).tools.map((x) => x.name);
    expect(merchantTools.filter((n) => ['svc_agent_get', 'svc_get_balance', 'svc_pay', 'svc_create_escrow'].includes(n))).toEqual([]);
    const [isError, refused] = await call(await connect(merchant.key), 'svc_pay', { to: 'x', amount: '1.00', idempotencyKey: 'k' });
    expect([isError, refused.code]).toEqual([true, 'missing_scope']);
  });

  it('svc_pay pays on chain under the policy; a replay returns the same payment; svc_get_payment_status and svc_get_balance follow it', async () => {
    const payee = await createPayee(t, chain);
    const agent = await createAgent(t, chain, { float: 50n * USDC, policy: { dailyLimit: '30.00' } });
    const client = await connect(agent.key);
    expect(await ok(client, 'svc_agent_get')).toMatchObject({ id: agent.agentId, signer: { enabled: true, address: agent.signerAddress } });
    const before = await chain.gateway.usdcBalance(payee.address);

    const key = `mcp-pay-${randomUUID()}`;
    const payment = await ok(client, 'svc_pay', { to: payee.handle, amount: '20.00', idempotencyKey: key });
    expect(payment).toMatchObject({ to: payee.handle, amount: '20.00', mode: 'instant' });
    expect(await ok(client, 'svc_pay', { to: payee.handle, amount: '20.00', idempotencyKey: key })).toMatchObject({ id: payment.id });
    await settleUntil(t, async () => (await paymentRows(t, agent.agentId))[0]?.status === 'succeeded');
    expect(await ok(client, 'svc_get_payment_status', { paymentId: payment.id })).toMatchObject({ status: 'succeeded', payment: { id: payment.id } });
    expect((await chain.gateway.usdcBalance(payee.address)) - before).toBe(20n * USDC);
    expect(await paymentRows(t, agent.agentId)).toHaveLength(1);
    expect(await ok(client, 'svc_get_balance')).toMatchObject({ onChainBalance: '30.00' });

    const [noKey, missing] = await call(client, 'svc_pay', { to: payee.handle, amount: '1.00' });
    expect([noKey, missing.code]).toEqual([true, 'idempotency_required']);
    const [overLimit, denied] = await call(client, 'svc_pay', { to: payee.handle, amount: '20.00', idempotencyKey: `mcp-pay-${randomUUID()}` });
    expect([overLimit, denied.code, (denied.details as Body).rule]).toEqual([true, 'policy_denied', 'daily_limit']);
  });

  it('refuses with signer_required without an enabled signer, and svc_create_escrow creates an agent escrow', async () => {
    const noSigner = await createAgent(t, chain, { float: 0n, enable: false });
    const payee = await createPayee(t, chain);
    const [isError, body] = await call(await connect(noSigner.key), 'svc_pay', { to: payee.handle, amount: '1.00', idempotencyKey: `k-${randomUUID()}` });
    expect([isError, body.code]).toEqual([true, 'signer_required']);

    const agent = await createAgent(t, chain, { float: 50n * USDC });
    const escrow = await ok(await connect(agent.key), 'svc_create_escrow', { to: payee.handle, amount: '12.00', description: 'Logo', idempotencyKey: `e-${randomUUID()}` });
    expect(escrow).toMatchObject({ amount: '12.00' });
  });
});
