import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { parseAmount } from '@lib/money';
import { VerificationService } from '../../src/modules/verification/verification.service';
import { createTestApp, TestApp } from '../support/app';
import { callTool, McpClients } from '../support/mcp-client';
import { TestChain, USDC } from '../support/chain';
import { createOrg } from '../support/factories';

jest.setTimeout(90_000);

type Body = Record<string, unknown>;

/**
 * svc_verification_get|checkout|confirm|start (docs/architecture.md §15) through the official MCP
 * client: listed only with verification scopes, the same bodies and refusals as REST
 * (idempotencyKey required on confirm, 403 kyb_rejected), the wallet check paid on anvil.
 */
describe('MCP verification tools', () => {
  let t: TestApp;
  let chain: TestChain;
  let base: string;
  const mcp = new McpClients(() => `${base}/mcp`);

  beforeAll(async () => {
    t = await createTestApp();
    chain = new TestChain();
    await t.app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await mcp.closeAll();
    chain?.close();
    await t?.close();
  });

  const connect = (key: string) => mcp.asKey(key);
  const call = callTool;

  it('lists the four tools only for a credential with verification scopes', async () => {
    const names = async (scopes: string[]) => {
      const org = await createOrg(t.app, { scopes });
      return (await (await connect(org.key)).listTools()).tools.map((x) => x.name).filter((n) => n.startsWith('svc_verification_'));
    };
    expect((await names(['verification:write'])).sort()).toEqual(['svc_verification_checkout', 'svc_verification_confirm', 'svc_verification_get', 'svc_verification_start']);
    expect(await names(['verification:read'])).toEqual(['svc_verification_get']);
    expect(await names(['checkout:read'])).toEqual([]);
  });

  it('checkout → pay on chain → confirm (idempotencyKey required) → start; a rejected organisation gets kyb_rejected', async () => {
    const wallet = await chain.wallet({ usdc: 10n * USDC });
    const org = await createOrg(t.app, { payoutAddress: wallet.address });
    const client = await connect(org.key);
    const [, check] = await call(client, 'svc_verification_checkout');
    expect(check).toMatchObject({ status: 'pending', address: wallet.address });
    const txHash = await chain.usdcTransfer(wallet, check.payTo as string, parseAmount(check.amount));
    const [noKey, refusal] = await call(client, 'svc_verification_confirm', { txHash } as Body);
    expect([noKey, refusal.code]).toEqual([true, 'idempotency_required']);
    const key = randomUUID();
    const [isError, confirmed] = await call(client, 'svc_verification_confirm', { txHash, idempotencyKey: key });
    expect(isError).toBe(false);
    expect(confirmed).toMatchObject({ status: 'pending', wallet: { status: 'verified', txHash: txHash.toLowerCase() } });
    const rest = await t.http.get('/api/v1/verification').set('X-Api-Key', org.key);
    expect(rest.body).toEqual((await call(client, 'svc_verification_get'))[1]);
    const [, started] = await call(client, 'svc_verification_start');
    expect(started.verificationUrl).toMatch(/\/verify\/vsb_/);

    await t.app.get(VerificationService).decide(org.organizationId, 'declined');
    for (const name of ['svc_verification_checkout', 'svc_verification_start']) {
      const [err, body] = await call(client, name);
      expect([err, body.code]).toEqual([true, 'kyb_rejected']);
    }
    const [err, body] = await call(client, 'svc_verification_confirm', { txHash, idempotencyKey: randomUUID() });
    expect([err, body.code]).toEqual([true, 'kyb_rejected']);
  });
});
