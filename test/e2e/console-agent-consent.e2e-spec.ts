import { randomUUID } from 'node:crypto';
import { hexlify, randomBytes, Wallet } from 'ethers';
import { ENABLE_SIGNER_TYPES, ownerDomain } from '../../src/modules/agents/owner-messages';
import { createTestApp, TestApp } from '../support/app';
import { TestChain, USDC } from '../support/chain';
import { agentOwnerProof, consentFrom, consoleHeaders, consoleSignIn, ConsoleLogin } from '../support/console';
import { expectError } from '../support/errors';

jest.setTimeout(90_000);

/**
 * Whose float it is (DESIGN §19, issue 28 item 1): the organisation owner O may pause an agent owned
 * by V, lower its policy and revoke its keys, but raising its policy, resuming it and creating a key
 * that may pay need V: V's own console session, or V's EIP-712 AgentConsent carried by the request.
 */
describe('console: the agent owner consents to what moves its float', () => {
  let t: TestApp;
  let chain: TestChain;
  const O = Wallet.createRandom();
  const V = Wallet.createRandom();
  let o: ConsoleLogin;
  let v: ConsoleLogin;
  let orgId: string;
  let agentId: string;

  beforeAll(async () => {
    t = await createTestApp({ REDIS_PREFIX: `${process.env.REDIS_PREFIX}-${randomUUID().slice(0, 8)}` });
    chain = new TestChain();
    o = await consoleSignIn(t, O);
    v = await consoleSignIn(t, V);
    orgId = (await t.http.post('/console/api/organizations').set(consoleHeaders(o)).send({ name: 'O Co', handle: `oco-${randomUUID().slice(0, 8)}` }).expect(200)).body.id;
    const slug = `vbot-${randomUUID().slice(0, 8)}`;
    // O may name V as the agent's owner only with V's proof.
    const refused = await t.http.post('/api/v1/agents').set(consoleHeaders(o, orgId)).send({ slug, ownerAddress: V.address });
    expect(expectError(refused, 403, 'forbidden')).toMatchObject({ reason: 'agent_owner_consent_required' });
    const forged = await agentOwnerProof(O, { organizationId: orgId, slug, ownerAddress: V.address });
    expect(expectError(await t.http.post('/api/v1/agents').set(consoleHeaders(o, orgId)).send({ slug, ownerAddress: V.address, ownerProof: forged }), 403, 'forbidden')).toMatchObject({ reason: 'agent_owner_consent_required' });
    const proof = await agentOwnerProof(V, { organizationId: orgId, slug, ownerAddress: V.address });
    const created = await t.http.post('/api/v1/agents').set(consoleHeaders(o, orgId)).send({ slug, ownerAddress: V.address, ownerProof: proof });
    expect(created.status).toBe(200);
    agentId = created.body.id;
    // V sets a small policy from its own session, enables the signer with its wallet and tops up 3.00.
    const vh = { Cookie: v.cookie, 'X-CSRF-Token': v.csrf, 'X-Console-Agent': agentId };
    expect((await t.http.put(`/api/v1/agents/${agentId}/policy`).set(vh).send({ perTransactionMax: '1.00', dailyLimit: '3.00' })).status).toBe(200);
    const nonce = hexlify(randomBytes(32));
    const deadline = Math.floor(Date.now() / 1000) + 600;
    const signature = await V.signTypedData(ownerDomain(31337), ENABLE_SIGNER_TYPES, { agentId, signer: created.body.signer.address, enabled: true, nonce, deadline });
    expect((await t.http.post(`/api/v1/agents/${agentId}/signer`).send({ enabled: true, nonce, deadline, signature })).status).toBe(200);
    await chain.mintUsdc(created.body.signer.address, 3n * USDC);
  });
  afterAll(async () => {
    chain.close();
    await t.close();
  });

  const asO = () => consoleHeaders(o, orgId);
  const asV = () => ({ Cookie: v.cookie, 'X-CSRF-Token': v.csrf, 'X-Console-Agent': agentId });
  const agent = async () => (await t.http.get(`/api/v1/agents/${agentId}`).set(asO()).expect(200)).body;

  it('O cannot raise the policy, field by field, without V; O may lower it', async () => {
    for (const raise of [
      { perTransactionMax: '1000.00', dailyLimit: '1000.00' },
      { perTransactionMax: '1.00', dailyLimit: '3.01' },
      { perTransactionMax: '1.00' }, // dailyLimit unset = no daily limit
    ]) {
      const res = await t.http.put(`/api/v1/agents/${agentId}/policy`).set(asO()).send(raise);
      const details = expectError(res, 403, 'forbidden');
      expect(details).toMatchObject({ reason: 'agent_owner_consent_required', action: 'raise_policy', ownerAddress: V.address });
    }
    expect((await agent()).policy).toMatchObject({ perTransactionMax: '1.00', dailyLimit: '3.00' });
    // Lowering needs nobody: lower limits, a recipient list, mandate mode, a narrower validity window.
    const lowered = { perTransactionMax: '0.50', dailyLimit: '2.00', allowedRecipients: ['someone'], mode: 'mandate', validFrom: '2020-01-01T00:00:00.000Z', expiresAt: '2099-01-01T00:00:00.000Z' };
    const lower = await t.http.put(`/api/v1/agents/${agentId}/policy`).set(asO()).send(lowered);
    expect(lower.status).toBe(200);
    expect(lower.body.policy).toMatchObject(lowered);
    // Each loosening field alone is a raise: recipients widened (empty = any), mode towards autonomous, validity extended.
    for (const raise of [
      { ...lowered, allowedRecipients: [] },
      { ...lowered, allowedRecipients: ['someone', 'o-shop'] },
      { ...lowered, mode: 'autonomous' },
      { ...lowered, validFrom: '2019-01-01T00:00:00.000Z' },
      { ...lowered, expiresAt: '2100-01-01T00:00:00.000Z' },
      { ...lowered, expiresAt: undefined },
      { ...lowered, monthlyLimit: '10.00', perTransactionMax: '0.51' },
    ]) {
      expect(expectError(await t.http.put(`/api/v1/agents/${agentId}/policy`).set(asO()).send(raise), 403, 'forbidden')).toMatchObject({ reason: 'agent_owner_consent_required' });
    }
    expect((await agent()).policy).toMatchObject(lowered);
    // Back to V's policy, from V's own session (no consent needed there).
    expect((await t.http.put(`/api/v1/agents/${agentId}/policy`).set(asV()).send({ perTransactionMax: '1.00', dailyLimit: '3.00' })).status).toBe(200);
  });

  it("O's raise applies with V's consent (the typed data the refusal names, signed by V); a consent is single use and bound to its payload", async () => {
    const raise = { perTransactionMax: '1000.00', dailyLimit: '1000.00' };
    const refused = expectError(await t.http.put(`/api/v1/agents/${agentId}/policy`).set(asO()).send(raise), 403, 'forbidden');
    // O signing it itself does not do.
    const byO = await consentFrom(O, refused!.typedData);
    expect(expectError(await t.http.put(`/api/v1/agents/${agentId}/policy`).set(asO()).send({ ...raise, consent: byO }), 403, 'forbidden')).toMatchObject({ reason: 'agent_owner_consent_required' });
    const byV = await consentFrom(V, refused!.typedData);
    // V's consent to this policy does not cover another one.
    expect(expectError(await t.http.put(`/api/v1/agents/${agentId}/policy`).set(asO()).send({ perTransactionMax: '1000.00', consent: byV }), 403, 'forbidden')).toMatchObject({ reason: 'agent_owner_consent_required' });
    const applied = await t.http.put(`/api/v1/agents/${agentId}/policy`).set(asO()).send({ ...raise, consent: byV });
    expect(applied.status).toBe(200);
    expect(applied.body.policy).toMatchObject({ perTransactionMax: '1000.00', dailyLimit: '1000.00' });
    // Replayed after a lowering: refused.
    expect((await t.http.put(`/api/v1/agents/${agentId}/policy`).set(asO()).send({ perTransactionMax: '1.00', dailyLimit: '3.00' })).status).toBe(200);
    expect(expectError(await t.http.put(`/api/v1/agents/${agentId}/policy`).set(asO()).send({ ...raise, consent: byV }), 403, 'forbidden')).toMatchObject({ reason: 'agent_owner_consent_required' });
    expect((await agent()).policy).toMatchObject({ perTransactionMax: '1.00', dailyLimit: '3.00' });
  });

  it('O may pause but not resume; V resumes from its own session or consents', async () => {
    expect((await t.http.post(`/api/v1/agents/${agentId}/pause`).set(asO())).body.paused).toBe(true);
    const refused = expectError(await t.http.post(`/api/v1/agents/${agentId}/resume`).set(asO()), 403, 'forbidden');
    expect(refused).toMatchObject({ reason: 'agent_owner_consent_required', action: 'resume' });
    expect((await agent()).paused).toBe(true);
    const consent = await consentFrom(V, refused!.typedData);
    expect((await t.http.post(`/api/v1/agents/${agentId}/resume`).set(asO()).send({ consent })).body.paused).toBe(false);
    expect((await t.http.post(`/api/v1/agents/${agentId}/pause`).set(asO())).body.paused).toBe(true);
    expect((await t.http.post(`/api/v1/agents/${agentId}/resume`).set(asV())).body.paused).toBe(false);
  });

  it('O cannot create a key that may pay without V; other agent keys are fine; the list shows who created each key; O may revoke', async () => {
    for (const scopes of [['agent:pay'], [], ['agent:escrow:fund']]) {
      const refused = expectError(await t.http.post(`/api/v1/agents/${agentId}/keys`).set(asO()).send({ scopes }), 403, 'forbidden');
      expect(refused).toMatchObject({ reason: 'agent_owner_consent_required', action: 'create_pay_key' });
    }
    const read = await t.http.post(`/api/v1/agents/${agentId}/keys`).set(asO()).send({ scopes: ['agent:balance:read'] });
    expect(read.status).toBe(200);
    const refused = expectError(await t.http.post(`/api/v1/agents/${agentId}/keys`).set(asO()).send({ scopes: ['agent:pay'] }), 403, 'forbidden');
    const consent = await consentFrom(V, refused!.typedData);
    const pay = await t.http.post(`/api/v1/agents/${agentId}/keys`).set(asO()).send({ scopes: ['agent:pay'], consent });
    expect(pay.status).toBe(200);
    const own = await t.http.post(`/api/v1/agents/${agentId}/keys`).set(asV()).send({ scopes: ['agent:pay'] });
    expect(own.status).toBe(200);
    const keys = (await t.http.get('/api/v1/api-keys').set(asO()).expect(200)).body as Array<{ id: string; createdBy: string | null }>;
    expect(keys.find((k) => k.id === read.body.id)!.createdBy).toBe(`console:${O.address.toLowerCase()}`);
    expect(keys.find((k) => k.id === pay.body.id)!.createdBy).toBe(`console:${O.address.toLowerCase()}`);
    expect(keys.find((k) => k.id === own.body.id)!.createdBy).toBe(`console:${V.address.toLowerCase()}`);
    expect((await t.http.post(`/api/v1/api-keys/${pay.body.id}/revoke`).set(asO())).status).toBe(200);
  });

  it("an organisation owner who is also the agent's owner needs no consent", async () => {
    const slug = `obot-${randomUUID().slice(0, 8)}`;
    const mine = (await t.http.post('/api/v1/agents').set(asO()).send({ slug }).expect(200)).body;
    expect(mine.ownerAddress).toBe(O.address);
    expect((await t.http.put(`/api/v1/agents/${mine.id}/policy`).set(asO()).send({ dailyLimit: '500.00' })).status).toBe(200);
    expect((await t.http.post(`/api/v1/agents/${mine.id}/keys`).set(asO()).send({ scopes: ['agent:pay'] })).status).toBe(200);
  });
});
