import type { INestApplicationContext } from '@nestjs/common';
import { type BaseWallet, hexlify, randomBytes, Wallet } from 'ethers';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { COMMANDS } from '../../src/cli/commands';
import { AppConfig } from '../../src/config/app-config';
import { AgentsService } from '../../src/modules/agents/agents.service';
import { ownerDomain } from '../../src/modules/agents/owner-messages';
import type { MandateTerms } from '../../src/modules/mandates/mandate-credentials';
import { issueSdJwtMandate, signIntentMandate } from '../../src/modules/mandates/mandate-signing';
import { REVOKE_MANDATE_TYPES } from '../../src/modules/mandates/mandates.service';
import { createAgent, createPayee, pay, paymentRows, settleUntil, startRelayerWorker, TestAgent } from '../support/agents';
import { createTestApp, TestApp } from '../support/app';
import { TestChain, USDC } from '../support/chain';
import { McpClients, okTool, refusedTool } from '../support/mcp-client';

jest.setTimeout(120_000);

const SCOPES = ['agent:pay', 'agent:balance:read', 'agent:mandate'];

/**
 * AP2 intent mandates (docs/architecture.md §14) on the real api, Postgres, Redis and anvil: both
 * credential formats, every 400, mandate mode on POST /payments (coverage, refusal order, the
 * mandate recorded on the payment, usedAmount computed), the concurrency bound under the agent
 * row lock, revocation by the owner and by the operator CLI, and svc_list_mandates.
 */
describe('AP2 mandates (/api/v1/mandates)', () => {
  let t: TestApp;
  let chain: TestChain;
  let worker: INestApplicationContext;
  let chainId: number;
  let base: string;
  const mcp = new McpClients(() => `${base}/mcp`);

  beforeAll(async () => {
    t = await createTestApp();
    chain = new TestChain();
    worker = await startRelayerWorker();
    chainId = t.app.get(AppConfig).env.CHAIN_ID;
    await t.app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await mcp.closeAll();
    await worker?.close();
    await t?.close();
    chain?.close();
  });

  const inHours = (h: number) => new Date(Date.now() + h * 3_600_000).toISOString();
  const termsFor = (payees: string[], over: Partial<MandateTerms> = {}): MandateTerms => ({
    payees,
    maxAmountPerPayment: '20.00',
    totalAmount: '100.00',
    expiresAt: inHours(24),
    description: 'API credits',
    ...over,
  });
  const post = (agent: TestAgent, body: Record<string, unknown>, key?: string) => {
    const req = t.http.post('/api/v1/mandates').set('X-Api-Key', agent.key);
    if (key) req.set('Idempotency-Key', key);
    return req.send(body);
  };
  async function eip712(agent: TestAgent, terms: MandateTerms, signer: BaseWallet = agent.owner, nonce?: string) {
    return { ...terms, credential: await signIntentMandate(signer, chainId, agent.slug, terms, nonce) };
  }
  async function createMandate(agent: TestAgent, terms: MandateTerms): Promise<{ id: string } & Record<string, unknown>> {
    const res = await post(agent, await eip712(agent, terms));
    expect(res.status).toBe(200);
    return res.body;
  }
  const getMandate = async (agent: TestAgent, id: string) => (await t.http.get(`/api/v1/mandates/${id}`).set('X-Api-Key', agent.key)).body;
  const mandateAgent = (float = 200n * USDC, policy: Record<string, unknown> = { mode: 'mandate', dailyLimit: '1000.00' }) =>
    createAgent(t, chain, { float, policy, scopes: SCOPES });

  describe('POST /mandates', () => {
    it('stores a valid v0.1 EIP-712 mandate: active, usedAmount 0, credential kept; the same Idempotency-Key replays it', async () => {
      const agent = await mandateAgent(0n);
      const body = await eip712(agent, termsFor(['Shop-A', '0x00000000000000000000000000000000000000Aa']));
      const res = await post(agent, body, 'mandate-key-1');
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        id: expect.any(String),
        payees: ['shop-a', '0x00000000000000000000000000000000000000aa'],
        maxAmountPerPayment: '20.00',
        totalAmount: '100.00',
        usedAmount: '0.00',
        currency: 'USDC',
        status: 'active',
        description: 'API credits',
        credential: { format: 'eip712', signer: agent.owner.address, primaryType: 'IntentMandate' },
      });
      expect(res.body.expiresAt).toBe(new Date(body.expiresAt).toISOString());
      // Money is decimal text on every surface (docs/architecture.md §17), the EIP-712 message's amount strings included.
      expect((body.credential as { message: Record<string, unknown> }).message).toMatchObject({ maxAmountPerPayment: '20.00', totalAmount: '100.00' });
      const again = await post(agent, body, 'mandate-key-1');
      expect(again.status).toBe(200);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.body.id).toBe(res.body.id);
      expect(await getMandate(agent, res.body.id)).toEqual(res.body);
      const list = await t.http.get('/api/v1/mandates').set('X-Api-Key', agent.key);
      expect(list.body).toEqual({ data: [res.body], hasMore: false, nextCursor: null });
    });

    it('stores a valid v0.2 SD-JWT mandate (ES256K by the owner, did:pkh)', async () => {
      const agent = await mandateAgent(0n);
      const terms = termsFor(['shop-b'], { expiresAt: new Date(Math.floor(Date.now() / 1000 + 86_400) * 1000).toISOString() });
      const token = await issueSdJwtMandate(agent.owner.privateKey, chainId, agent.slug, terms);
      const res = await post(agent, { ...terms, credential: { format: 'sd-jwt', token } });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ status: 'active', payees: ['shop-b'], credential: { format: 'sd-jwt', token } });
      // The same token again: its jti was used.
      const reused = await post(agent, { ...terms, credential: { format: 'sd-jwt', token } });
      expect(reused.status).toBe(400);
      expect(reused.body).toMatchObject({ code: 'invalid_request', details: { reason: 'nonce_used' } });
    });

    it('400 for a tampered credential, another signer, an expired mandate, a reused nonce, body terms that differ and an unknown format', async () => {
      const agent = await mandateAgent(0n);
      const terms = termsFor(['shop-c']);
      const expectReason = async (body: Record<string, unknown>, reason: string) => {
        const res = await post(agent, body);
        expect([res.status, res.body.code, res.body.details?.reason]).toEqual([400, 'invalid_request', reason]);
      };
      const good = await eip712(agent, terms);
      const credential = good.credential as Record<string, unknown>;
      await expectReason({ ...good, totalAmount: '900.00', credential: { ...credential, message: { ...(credential.message as object), totalAmount: '900.00' } } }, 'bad_signature');
      await expectReason(await eip712(agent, terms, Wallet.createRandom()), 'signer_not_owner');
      await expectReason(await eip712(agent, termsFor(['shop-c'], { expiresAt: new Date(Date.now() - 60_000).toISOString() })), 'expired');
      await expectReason({ ...good, maxAmountPerPayment: '1.00' }, 'terms_mismatch');
      await expectReason({ ...terms, credential: { format: 'jwt', token: 'x' } }, 'unsupported_format');
      const otherKey = await issueSdJwtMandate(Wallet.createRandom().privateKey, chainId, agent.slug, terms);
      await expectReason({ ...terms, credential: { format: 'sd-jwt', token: otherKey } }, 'signer_not_owner');
      const nonce = hexlify(randomBytes(32));
      expect((await post(agent, await eip712(agent, terms, agent.owner, nonce))).status).toBe(200);
      await expectReason(await eip712(agent, termsFor(['shop-d']), agent.owner, nonce), 'nonce_used');
      for (const bad of ['1.5000001', '-1.00', '0', '20000000', '1e3']) {
        const missing = await post(agent, { ...terms, maxAmountPerPayment: bad, credential: credential });
        expect(missing.status).toBe(400);
        expect(missing.body.details.fields).toEqual(expect.arrayContaining([expect.objectContaining({ param: 'maxAmountPerPayment' })]));
      }
      const overTotal = await post(agent, { ...terms, maxAmountPerPayment: '100.01', credential: credential });
      expect(overTotal.body.details.fields).toEqual([expect.objectContaining({ param: 'maxAmountPerPayment' })]);
      expect((await t.http.get('/api/v1/mandates').set('X-Api-Key', agent.key)).body.data).toHaveLength(1);
    });

    it('lists by cursor, newest first; another agent’s mandate is 404; an unknown cursor is 400', async () => {
      const agent = await mandateAgent(0n);
      const first = await createMandate(agent, termsFor(['p1']));
      const second = await createMandate(agent, termsFor(['p2']));
      const page1 = (await t.http.get('/api/v1/mandates?limit=1').set('X-Api-Key', agent.key)).body;
      expect(page1).toMatchObject({ hasMore: true, nextCursor: second.id, data: [{ id: second.id }] });
      const page2 = (await t.http.get(`/api/v1/mandates?limit=1&starting_after=${second.id}`).set('X-Api-Key', agent.key)).body;
      expect(page2).toMatchObject({ hasMore: false, nextCursor: null, data: [{ id: first.id }] });
      const stranger = await mandateAgent(0n);
      expect((await t.http.get(`/api/v1/mandates/${first.id}`).set('X-Api-Key', stranger.key)).status).toBe(404);
      expect((await t.http.get('/api/v1/mandates').set('X-Api-Key', stranger.key)).body.data).toEqual([]);
      const unknown = await t.http.get(`/api/v1/mandates?starting_after=${first.id}`).set('X-Api-Key', stranger.key);
      expect([unknown.status, unknown.body.code]).toEqual([400, 'invalid_request']);
    });

    it('needs scope agent:mandate and an agent key', async () => {
      const agent = await createAgent(t, chain, { scopes: ['agent:pay'] });
      const res = await post(agent, await eip712(agent, termsFor(['x'])));
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ code: 'missing_scope', details: { required: ['agent:mandate'] } });
      expect((await t.http.get(`/api/v1/mandates/${randomUUID()}`).set('X-Api-Key', (await mandateAgent(0n)).key)).status).toBe(404);
    });
  });

  describe('mandate mode on POST /payments', () => {
    it('no covering mandate → 403 mandate_required: payee not covered, amount over maxAmountPerPayment, budget left too small', async () => {
      const payee = await createPayee(t, chain);
      const other = await createPayee(t, chain);
      const agent = await mandateAgent();
      await createMandate(agent, termsFor([payee.handle], { maxAmountPerPayment: '20.00', totalAmount: '30.00' }));
      const refused = async (to: string, amount: string) => {
        const res = await pay(t, agent, { to, amount });
        expect([res.status, res.body.code]).toEqual([403, 'mandate_required']);
      };
      await refused(other.handle, '1.00');
      await refused(payee.handle, '20.01');
      expect((await pay(t, agent, { to: payee.handle, amount: '20.00' })).status).toBe(200);
      await refused(payee.handle, '10.01');
      expect((await pay(t, agent, { to: payee.handle, amount: '10.00' })).status).toBe(200);
      await refused(payee.handle, '0.000001');
      expect((await paymentRows(t, agent.agentId)).map((p) => p.amount)).toEqual(['20000000', '10000000']);
    });

    it('with a covering mandate the payment succeeds, records mandateId (GET /payments/{id}) and usedAmount rises; exhausted when spent; the payee may be named by address', async () => {
      const payee = await createPayee(t, chain);
      const agent = await mandateAgent();
      const m = await createMandate(agent, termsFor([payee.address.toLowerCase()], { totalAmount: '25.00' }));
      const res = await pay(t, agent, { to: payee.handle, amount: '12.5' });
      expect(res.status).toBe(200);
      expect(res.body.mandateId).toBe(m.id);
      await settleUntil(t, async () => (await t.http.get(`/api/v1/payments/${res.body.id}`).set('X-Api-Key', agent.key)).body.status === 'succeeded');
      expect((await t.http.get(`/api/v1/payments/${res.body.id}`).set('X-Api-Key', agent.key)).body).toMatchObject({ status: 'succeeded', mandateId: m.id });
      expect(await getMandate(agent, m.id)).toMatchObject({ usedAmount: '12.50', status: 'active' });
      expect((await pay(t, agent, { to: payee.handle, amount: '12.5' })).status).toBe(200);
      expect(await getMandate(agent, m.id)).toMatchObject({ usedAmount: '25.00', status: 'exhausted' });
      expect((await pay(t, agent, { to: payee.handle, amount: '0.01' })).body.code).toBe('mandate_required');
      expect(await chain.usdcBalance(payee.address)).toBeGreaterThanOrEqual(12_500_000n);
    });

    it('several covering mandates: the one expiring first is used; an expired one no longer covers', async () => {
      const payee = await createPayee(t, chain);
      const agent = await mandateAgent();
      const later = await createMandate(agent, termsFor([payee.handle], { expiresAt: inHours(48) }));
      const sooner = await createMandate(agent, termsFor([payee.handle], { expiresAt: inHours(2) }));
      expect((await pay(t, agent, { to: payee.handle, amount: '5.00' })).body.mandateId).toBe(sooner.id);
      // Time passes for the sooner one (moved into the past in the row; the clock is the service's).
      await t.dataSource.query(`UPDATE mandates SET expires_at = now() - interval '1 second' WHERE id = $1`, [sooner.id]);
      expect(await getMandate(agent, sooner.id)).toMatchObject({ status: 'expired', usedAmount: '5.00' });
      expect((await pay(t, agent, { to: payee.handle, amount: '5.00' })).body.mandateId).toBe(later.id);
      await t.dataSource.query(`UPDATE mandates SET expires_at = now() - interval '1 second' WHERE id = $1`, [later.id]);
      expect((await pay(t, agent, { to: payee.handle, amount: '5.00' })).body.code).toBe('mandate_required');
    });

    it('refusal order holds: a paused agent in mandate mode → agent_paused; a covered spend over the policy → policy_denied', async () => {
      const payee = await createPayee(t, chain);
      const agent = await mandateAgent(200n * USDC, { mode: 'mandate', dailyLimit: '15.00' });
      await t.app.get(AgentsService).setPaused(agent.agentId, true);
      expect((await pay(t, agent, { to: payee.handle, amount: '10.00' })).body.code).toBe('agent_paused');
      await t.app.get(AgentsService).setPaused(agent.agentId, false);
      expect((await pay(t, agent, { to: payee.handle, amount: '10.00' })).body.code).toBe('mandate_required');
      await createMandate(agent, termsFor([payee.handle]));
      expect((await pay(t, agent, { to: payee.handle, amount: '10.00' })).status).toBe(200);
      expect((await pay(t, agent, { to: payee.handle, amount: '10.00' })).body).toMatchObject({ code: 'policy_denied', details: { rule: 'daily_limit' } });
      // An autonomous agent's payments never take a mandate, even when one would cover.
      const free = await mandateAgent(50n * USDC, { dailyLimit: '100.00' });
      await createMandate(free, termsFor([payee.handle]));
      expect((await pay(t, free, { to: payee.handle, amount: '1.00' })).body.mandateId).toBeNull();
    });

    it('concurrency: ten concurrent 10.00 spends under a 45.00 mandate → exactly four succeed, usedAmount never exceeds totalAmount', async () => {
      const payee = await createPayee(t, chain);
      const agent = await mandateAgent(500n * USDC);
      const m = await createMandate(agent, termsFor([payee.handle], { maxAmountPerPayment: '10.00', totalAmount: '45.00' }));
      const results = await Promise.all(Array.from({ length: 10 }, () => pay(t, agent, { to: payee.handle, amount: '10.00' })));
      expect(results.filter((r) => r.status === 200)).toHaveLength(4);
      const refused = results.filter((r) => r.status === 403);
      expect(refused).toHaveLength(6);
      for (const r of refused) expect(r.body.code).toBe('mandate_required');
      expect(await getMandate(agent, m.id)).toMatchObject({ usedAmount: '40.00', status: 'active' });
      const [{ sum }] = await t.dataSource.query(`SELECT SUM(amount)::text AS sum FROM payments WHERE mandate_id = $1`, [m.id]);
      expect(sum).toBe('40000000');
      await settleUntil(t, async () => (await paymentRows(t, agent.agentId)).every((p) => p.status === 'succeeded'));
      expect(await chain.usdcBalance(payee.address)).toBe(40n * USDC);
    });
  });

  describe('revocation', () => {
    async function revokeBody(owner: BaseWallet, mandateId: string, nonce = hexlify(randomBytes(32))) {
      const deadline = Math.floor(Date.now() / 1000) + 600;
      const signature = await owner.signTypedData(ownerDomain(chainId), REVOKE_MANDATE_TYPES, { mandateId, nonce, deadline });
      return { nonce, deadline, signature };
    }

    it('the owner’s EIP-712 RevokeMandate revokes: status revoked, spends refused; another signer or a reused nonce → 400; twice → 409', async () => {
      const payee = await createPayee(t, chain);
      const agent = await mandateAgent();
      const m = await createMandate(agent, termsFor([payee.handle]));
      const stranger = await revokeBody(Wallet.createRandom(), m.id);
      const bad = await t.http.post(`/api/v1/mandates/${m.id}/revoke`).send(stranger);
      expect([bad.status, bad.body.details?.reason]).toEqual([400, 'bad_signature']);
      const otherMandate = await createMandate(agent, termsFor([payee.handle]));
      const nonce = hexlify(randomBytes(32));
      expect((await t.http.post(`/api/v1/mandates/${otherMandate.id}/revoke`).send(await revokeBody(agent.owner, otherMandate.id, nonce))).status).toBe(200);
      const replayedNonce = await t.http.post(`/api/v1/mandates/${m.id}/revoke`).send(await revokeBody(agent.owner, m.id, nonce));
      expect([replayedNonce.status, replayedNonce.body.details?.reason]).toEqual([400, 'nonce_used']);
      const ok = await t.http.post(`/api/v1/mandates/${m.id}/revoke`).send(await revokeBody(agent.owner, m.id));
      expect(ok.status).toBe(200);
      expect(ok.body).toMatchObject({ id: m.id, status: 'revoked', revokedAt: expect.any(String) });
      expect((await pay(t, agent, { to: payee.handle, amount: '1.00' })).body.code).toBe('mandate_required');
      const twice = await t.http.post(`/api/v1/mandates/${m.id}/revoke`).send(await revokeBody(agent.owner, m.id));
      expect([twice.status, twice.body.details?.status]).toEqual([409, 'revoked']);
      expect((await t.http.post(`/api/v1/mandates/${randomUUID()}/revoke`).send(await revokeBody(agent.owner, m.id))).status).toBe(404);
    });

    it('operator CLI mandate:revoke <id>', async () => {
      const payee = await createPayee(t, chain);
      const agent = await mandateAgent();
      const m = await createMandate(agent, termsFor([payee.handle]));
      expect((await pay(t, agent, { to: payee.handle, amount: '1.00' })).status).toBe(200);
      const out = await COMMANDS['mandate:revoke'].run(t.app, {}, [m.id]);
      expect(out).toMatchObject({ id: m.id, status: 'revoked' });
      expect((await pay(t, agent, { to: payee.handle, amount: '1.00' })).body.code).toBe('mandate_required');
      expect(await getMandate(agent, m.id)).toMatchObject({ status: 'revoked', usedAmount: '1.00' });
    });
  });

  describe('demo:mandate', () => {
    it('signs an IntentMandate with the demo owner key; the printed body is accepted by POST /mandates', async () => {
      const agent = await mandateAgent(0n);
      const saved = process.env.DEMO_OWNER_PRIVATE_KEY;
      process.env.DEMO_OWNER_PRIVATE_KEY = agent.owner.privateKey;
      try {
        const body = await COMMANDS['demo:mandate'].run(
          t.app,
          { agent: agent.agentId, payees: 'shop-z,acme', 'max-per-payment': '5.00', total: '10.00' },
          [],
        );
        const res = await post(agent, body);
        expect(res.status).toBe(200);
        expect(res.body).toMatchObject({ payees: ['shop-z', 'acme'], maxAmountPerPayment: '5.00', totalAmount: '10.00', status: 'active' });
      } finally {
        if (saved === undefined) delete process.env.DEMO_OWNER_PRIVATE_KEY;
        else process.env.DEMO_OWNER_PRIVATE_KEY = saved;
      }
    });
  });

  describe('svc_list_mandates (MCP)', () => {
    it('lists the agent’s mandates exactly as GET /mandates; needs agent:mandate', async () => {
      const agent = await mandateAgent(0n);
      await createMandate(agent, termsFor(['shop-x']));
      await createMandate(agent, termsFor(['shop-y']));
      const client = await mcp.asKey(agent.key);
      const tools = (await client.listTools()).tools;
      expect(tools.find((x) => x.name === 'svc_list_mandates')?.annotations).toMatchObject({ readOnlyHint: true });
      const viaTool = await okTool(client, 'svc_list_mandates', { limit: 1 });
      const viaRest = (await t.http.get('/api/v1/mandates?limit=1').set('X-Api-Key', agent.key)).body;
      expect(viaTool).toEqual(viaRest);
      expect(viaTool).toMatchObject({ hasMore: true, data: [{ payees: ['shop-y'] }] });
      const noScope = await createAgent(t, chain, { scopes: ['agent:pay'] });
      await refusedTool(await mcp.asKey(noScope.key), 'svc_list_mandates', {}, 'missing_scope');
    });
  });
});
