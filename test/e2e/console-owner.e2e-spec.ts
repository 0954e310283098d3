import { randomUUID } from 'node:crypto';
import { createServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { formatEther, Wallet } from 'ethers';
import { createTestApp, TestApp } from '../support/app';
import { agentOwnerProof, consoleHeaders, consoleSignIn, ConsoleLogin } from '../support/console';
import { expectError } from '../support/errors';
import { TestChain } from '../support/chain';

jest.setTimeout(60_000);

/**
 * Owner actions from the console (docs/architecture.md §19): owners, API keys, agents, policy,
 * pause, agent keys, an agent's payments and mandates; each through the one guard as a `console`
 * principal; API keys may not take them; another address gets 404 for all of them.
 */
describe('console owner actions', () => {
  let t: TestApp;
  const owner = Wallet.createRandom();
  const stranger = Wallet.createRandom();
  let login: ConsoleLogin;
  let other: ConsoleLogin;
  let orgId: string;

  beforeAll(async () => {
    t = await createTestApp({ REDIS_PREFIX: `${process.env.REDIS_PREFIX}-${randomUUID().slice(0, 8)}` });
    login = await consoleSignIn(t, owner);
    other = await consoleSignIn(t, stranger);
    orgId = (await t.http.post('/console/api/organizations').set(consoleHeaders(login)).send({ name: 'Owner Co', handle: `owner-${randomUUID().slice(0, 8)}` }).expect(200)).body.id;
  });
  afterAll(() => t.close());

  const as = (l: ConsoleLogin, org = orgId) => consoleHeaders(l, org);

  it('creates a merchant key (secret once), which then works against the API; lists it without the secret; revokes it at once', async () => {
    const created = await t.http.post('/api/v1/api-keys').set(as(login)).send({ scopes: ['checkout:write'] });
    expect(created.status).toBe(200);
    expect(created.body.secret).toMatch(/^bk_live_/);
    const me = await t.http.get('/api/v1/me').set('X-Api-Key', created.body.secret);
    expect(me.status).toBe(200);
    expect(me.body.organization.id).toBe(orgId);
    expect((await t.http.post('/api/v1/checkout-sessions').set('X-Api-Key', created.body.secret).send({ amount: '3.00', description: 'key from the console' })).status).toBe(200);
    const list = await t.http.get('/api/v1/api-keys').set(as(login));
    expect(list.status).toBe(200);
    const row = list.body.find((k: { id: string }) => k.id === created.body.id);
    expect(row).toMatchObject({ kind: 'merchant', scopes: ['checkout:write'], revokedAt: null });
    expect(JSON.stringify(list.body)).not.toContain(created.body.secret);
    const revoked = await t.http.post(`/api/v1/api-keys/${created.body.id}/revoke`).set(as(login));
    expect(revoked.status).toBe(200);
    expect(revoked.body.revokedAt).not.toBeNull();
    expectError(await t.http.get('/api/v1/me').set('X-Api-Key', created.body.secret), 401, 'unauthorized');
  });

  it("lists a key's last use: null until used, stamped by a request, not rewritten by the next ones within a minute", async () => {
    const created = (await t.http.post('/api/v1/api-keys').set(as(login)).send({ scopes: ['checkout:read'] }).expect(200)).body;
    expect(created.lastUsedAt).toBeNull();
    const lastUsed = async () => ((await t.http.get('/api/v1/api-keys').set(as(login)).expect(200)).body as Array<{ id: string; lastUsedAt: string | null }>).find((k) => k.id === created.id)!.lastUsedAt;
    expect(await lastUsed()).toBeNull();
    const before = Date.now();
    await t.http.get('/api/v1/me').set('X-Api-Key', created.secret).expect(200);
    const first = await lastUsed();
    expect(first).not.toBeNull();
    expect(Date.parse(first!)).toBeGreaterThanOrEqual(before - 5_000);
    // Within the minute a request writes nothing: move the stamp back and see that it stays there.
    const moved = new Date(Date.parse(first!) - 30_000).toISOString();
    await t.dataSource.query(`UPDATE api_keys SET last_used_at = $2 WHERE id = $1`, [created.id, moved]);
    await t.http.get('/api/v1/me').set('X-Api-Key', created.secret).expect(200);
    await t.http.post('/api/v1/checkout-sessions').set('X-Api-Key', created.secret).send({ amount: '1.00' });
    expect(await lastUsed()).toBe(moved);
  });

  it("reads the payout address's USDC and ETH from the chain (decimal text, with the block)", async () => {
    const chain = new TestChain();
    try {
      await chain.setEth(owner.address, 1_230_000_000_000_000_000n);
      await chain.mintUsdc(owner.address, 12_340_000n);
      const res = await t.http.get('/api/v1/payout-balance').set(as(login));
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ address: owner.address, usdc: '12.34', eth: formatEther(1_230_000_000_000_000_000n), blockNumber: expect.any(Number) });
      expect(res.body.blockNumber).toBeLessThanOrEqual(await chain.provider.getBlockNumber());
      expectError(await t.http.get('/api/v1/payout-balance').set(as(other)), 404, 'not_found');
    } finally {
      chain.close();
    }
  });

  it('answers 503 unavailable within RPC_TIMEOUT_MS when the node does not answer (never hangs)', async () => {
    // A node that accepts connections and never answers.
    const sockets = new Set<Socket>();
    let connections = 0;
    const silent = createServer((s) => {
      connections += 1;
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    });
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const dead = await createTestApp({ REDIS_PREFIX: `${process.env.REDIS_PREFIX}-${randomUUID().slice(0, 8)}`, RPC_URL: `http://127.0.0.1:${(silent.address() as AddressInfo).port}`, RPC_TIMEOUT_MS: '700' });
    try {
      const l = await consoleSignIn(dead, owner);
      const started = Date.now();
      const res = await dead.http.get('/api/v1/payout-balance').set(consoleHeaders(l, orgId));
      const took = Date.now() - started;
      expect(expectError(res, 503, 'unavailable')).toMatchObject({ reason: 'chain_unavailable' });
      expect(took).toBeGreaterThanOrEqual(600);
      expect(took).toBeLessThan(5_000);
      expect(connections).toBeGreaterThan(0); // it did ask the silent node
    } finally {
      await dead.close();
      for (const s of sockets) s.destroy();
      await new Promise((r) => silent.close(r));
    }
  });

  it("an agent's owner address manages that agent without owning its organisation; every other address gets 404 for its pages and actions", async () => {
    const agentOwner = Wallet.createRandom();
    const mineSlug = `own-${randomUUID().slice(0, 8)}`;
    const mine = (await t.http.post('/api/v1/agents').set(as(login)).send({ slug: mineSlug, ownerAddress: agentOwner.address, ownerProof: await agentOwnerProof(agentOwner, { organizationId: orgId, slug: mineSlug, ownerAddress: agentOwner.address }) }).expect(200)).body;
    const sibling = (await t.http.post('/api/v1/agents').set(as(login)).send({ slug: `sib-${randomUUID().slice(0, 8)}`, ownerAddress: owner.address }).expect(200)).body;
    const me = await consoleSignIn(t, agentOwner);
    const asAgent = (l: ConsoleLogin, agentId: string) => ({ Cookie: l.cookie, 'X-CSRF-Token': l.csrf, 'X-Console-Agent': agentId });
    const agentActions = (id: string) => [
      ['get', `/api/v1/agents/${id}`],
      ['get', `/api/v1/agents/${id}/balance`],
      ['get', `/api/v1/agents/${id}/payments`],
      ['get', `/api/v1/agents/${id}/mandates`],
      ['put', `/api/v1/agents/${id}/policy`, { dailyLimit: '9.00' }],
      ['post', `/api/v1/agents/${id}/pause`],
      ['post', `/api/v1/agents/${id}/keys`, { scopes: [] }],
    ] as const;
    const send = (m: 'get' | 'put' | 'post', path: string, headers: Record<string, string>, body?: object) => {
      const r = t.http[m](path).set(headers);
      return body ? r.send(body) : r;
    };

    // The owner of the agent: its page (linked from home) and each of its actions.
    const home = await t.http.get('/console').set('Cookie', me.cookie).expect(200);
    expect(home.text).toContain(`/console/agents/${mine.id}`);
    expect(home.text).not.toContain(sibling.id);
    const page = await t.http.get(`/console/agents/${mine.id}`).set('Cookie', me.cookie);
    expect(page.status).toBe(200);
    expect(page.text).toContain(`data-console-agent="${mine.id}"`);
    expect(page.text).not.toContain(`/console/orgs/${orgId}/keys`);
    const h = asAgent(me, mine.id);
    expect((await t.http.get(`/api/v1/agents/${mine.id}`).set(h)).body).toMatchObject({ id: mine.id, ownerAddress: agentOwner.address });
    expect((await t.http.put(`/api/v1/agents/${mine.id}/policy`).set(h).send({ dailyLimit: '25.00' })).body.policy).toMatchObject({ dailyLimit: '25.00' });
    expect((await t.http.post(`/api/v1/agents/${mine.id}/pause`).set(h)).body.paused).toBe(true);
    expect((await t.http.post(`/api/v1/agents/${mine.id}/resume`).set(h)).body.paused).toBe(false);
    const key = await t.http.post(`/api/v1/agents/${mine.id}/keys`).set(h).send({ scopes: ['agent:balance:read'] });
    expect(key.status).toBe(200);
    expect((await t.http.get('/api/v1/agent').set('X-Api-Key', key.body.secret)).body.id).toBe(mine.id);
    for (const path of [`/api/v1/agents/${mine.id}/payments`, `/api/v1/agents/${mine.id}/mandates`]) expect((await t.http.get(path).set(h)).status).toBe(200);

    // ... and nothing else of the organisation: not its routes, not its other agent, not its pages.
    for (const [m, path, body] of [['get', '/api/v1/me'], ['get', '/api/v1/agents'], ['post', '/api/v1/agents', { slug: `x-${randomUUID().slice(0, 8)}`, ownerAddress: agentOwner.address }], ['get', '/api/v1/api-keys'], ['post', '/api/v1/api-keys', { scopes: ['checkout:*'] }], ['get', '/api/v1/owners'], ['get', '/api/v1/checkout-sessions'], ['get', '/api/v1/webhook-endpoints'], ['get', '/api/v1/payout-balance']] as const) {
      expectError(await send(m, path, h, body), 404, 'not_found');
    }
    for (const [m, path, body] of agentActions(sibling.id)) expectError(await send(m, path, h, body), 404, 'not_found');
    for (const [m, path, body] of agentActions(sibling.id)) expectError(await send(m, path, asAgent(me, sibling.id), body), 404, 'not_found');
    for (const [m, path, body] of agentActions(mine.id)) expectError(await send(m, path, consoleHeaders(me, orgId), body), 404, 'not_found');
    expect((await t.http.get(`/console/orgs/${orgId}`).set('Cookie', me.cookie)).status).toBe(404);
    expect((await t.http.get(`/console/orgs/${orgId}/agents/${mine.id}`).set('Cookie', me.cookie)).status).toBe(404);
    expect((await t.http.get(`/console/agents/${sibling.id}`).set('Cookie', me.cookie)).status).toBe(404);

    // Another address: 404 for the agent's page and every action, and nothing changes.
    expect((await t.http.get(`/console/agents/${mine.id}`).set('Cookie', other.cookie)).status).toBe(404);
    for (const [m, path, body] of agentActions(mine.id)) {
      expectError(await send(m, path, asAgent(other, mine.id), body), 404, 'not_found');
      expectError(await send(m, path, consoleHeaders(other, orgId), body), 404, 'not_found');
    }
    const after = (await t.http.get(`/api/v1/agents/${mine.id}`).set(as(login))).body;
    expect(after).toMatchObject({ paused: false, policy: { dailyLimit: '25.00' } });
    expect(((await t.http.get('/api/v1/api-keys').set(as(login))).body as Array<{ agentId: string | null }>).filter((k) => k.agentId === mine.id)).toHaveLength(1);
  });

  it('an API key may not take owner actions (403 console_session_required)', async () => {
    const key = (await t.http.post('/api/v1/api-keys').set(as(login)).send({ scopes: ['checkout:*', 'webhooks:*'] })).body.secret as string;
    expect(expectError(await t.http.get('/api/v1/api-keys').set('X-Api-Key', key), 403, 'forbidden')).toMatchObject({ reason: 'console_session_required' });
    expect(expectError(await t.http.post('/api/v1/api-keys').set('X-Api-Key', key).send({ scopes: ['checkout:*'] }), 403, 'forbidden')).toMatchObject({ reason: 'console_session_required' });
    expectError(await t.http.post('/api/v1/agents').set('X-Api-Key', key).send({ slug: `a-${randomUUID().slice(0, 8)}`, ownerAddress: owner.address }), 403, 'forbidden');
  });

  it('creates an agent, sets its policy (decimal text), pauses and resumes it, mints an agent key; lists its payments and mandates', async () => {
    const slug = `bot-${randomUUID().slice(0, 8)}`;
    const agent = await t.http.post('/api/v1/agents').set(as(login)).send({ slug, ownerAddress: owner.address, name: 'Bot' });
    expect(agent.status).toBe(200);
    expect(agent.body).toMatchObject({ slug, organizationId: orgId, ownerAddress: owner.address, paused: false, signer: { enabled: false } });
    const id = agent.body.id as string;
    const policy = await t.http.put(`/api/v1/agents/${id}/policy`).set(as(login)).send({ perTransactionMax: '25.00', dailyLimit: '100', mode: 'autonomous' });
    expect(policy.status).toBe(200);
    expect(policy.body.policy).toMatchObject({ perTransactionMax: '25.00', dailyLimit: '100.00', mode: 'autonomous' });
    expectError(await t.http.put(`/api/v1/agents/${id}/policy`).set(as(login)).send({ dailyLimit: 'lots' }), 400, 'invalid_request');
    expect((await t.http.post(`/api/v1/agents/${id}/pause`).set(as(login))).body.paused).toBe(true);
    expect((await t.http.post(`/api/v1/agents/${id}/resume`).set(as(login))).body.paused).toBe(false);
    const key = await t.http.post(`/api/v1/agents/${id}/keys`).set(as(login)).send({ scopes: ['agent:pay', 'agent:balance:read'] });
    expect(key.status).toBe(200);
    expect(key.body.secret).toMatch(/^bk_agent_live_/);
    const self = await t.http.get('/api/v1/agent').set('X-Api-Key', key.body.secret);
    expect(self.body).toMatchObject({ id, policy: { dailyLimit: '100.00' } });
    expect((await t.http.get('/api/v1/agents').set(as(login))).body.map((a: { id: string }) => a.id)).toContain(id);
    expect((await t.http.get(`/api/v1/agents/${id}/payments`).set(as(login))).body).toMatchObject({ data: [] });
    expect((await t.http.get(`/api/v1/agents/${id}/mandates`).set(as(login))).body).toMatchObject({ data: [] });
  });

  it('owners add and remove owners, never the last; an added owner acts for the organisation', async () => {
    const added = await t.http.post('/api/v1/owners').set(as(login)).send({ address: stranger.address });
    expect(added.status).toBe(200);
    expect(added.body.map((o: { address: string }) => o.address)).toEqual(expect.arrayContaining([owner.address, stranger.address]));
    expect((await t.http.get('/api/v1/me').set(as(other))).status).toBe(200);
    expect((await t.http.post(`/api/v1/owners/${stranger.address}/remove`).set(as(login))).status).toBe(200);
    expectError(await t.http.get('/api/v1/me').set(as(other)), 404, 'not_found');
    const last = await t.http.post(`/api/v1/owners/${owner.address}/remove`).set(as(login));
    expect(expectError(last, 409, 'invalid_request')).toMatchObject({ reason: 'last_owner' });
  });

  it('another address gets 404 for every owner action of an organisation it does not own, and changes nothing', async () => {
    const agentId = (await t.http.post('/api/v1/agents').set(as(login)).send({ slug: `own-${randomUUID().slice(0, 8)}`, ownerAddress: owner.address })).body.id as string;
    const keyId = (await t.http.post('/api/v1/api-keys').set(as(login)).send({ scopes: ['checkout:read'] })).body.id as string;
    const attempts: Array<[string, string, object?]> = [
      ['get', '/api/v1/owners'],
      ['post', '/api/v1/owners', { address: stranger.address }],
      ['post', `/api/v1/owners/${owner.address}/remove`],
      ['get', '/api/v1/api-keys'],
      ['post', '/api/v1/api-keys', { scopes: ['checkout:read'] }],
      ['post', `/api/v1/api-keys/${keyId}/revoke`],
      ['get', '/api/v1/agents'],
      ['post', '/api/v1/agents', { slug: `x-${randomUUID().slice(0, 8)}`, ownerAddress: stranger.address }],
      ['get', `/api/v1/agents/${agentId}`],
      ['get', `/api/v1/agents/${agentId}/balance`],
      ['put', `/api/v1/agents/${agentId}/policy`, { dailyLimit: '1.00' }],
      ['post', `/api/v1/agents/${agentId}/pause`],
      ['post', `/api/v1/agents/${agentId}/resume`],
      ['post', `/api/v1/agents/${agentId}/keys`, { scopes: ['agent:pay'] }],
      ['get', `/api/v1/agents/${agentId}/payments`],
      ['get', `/api/v1/agents/${agentId}/mandates`],
      ['get', '/api/v1/webhook-endpoints'],
      ['put', '/api/v1/webhook-endpoints', { url: 'https://example.com/hook' }],
      ['get', '/api/v1/webhook-deliveries'],
      ['get', '/api/v1/checkout-sessions'],
      ['get', '/api/v1/escrows'],
      ['get', '/api/v1/invoices'],
      ['get', '/api/v1/offerings'],
      ['get', '/api/v1/verification'],
    ];
    for (const [method, path, body] of attempts) {
      const req = (t.http as unknown as Record<string, (p: string) => import('supertest').Test>)[method](path).set(as(other));
      const res = body ? await req.send(body) : await req;
      expect({ method, path, status: res.status }).toEqual({ method, path, status: 404 });
    }
    // An owner of ANOTHER organisation cannot reach this organisation's agent through its own.
    const otherOrg = (await t.http.post('/console/api/organizations').set(consoleHeaders(other)).send({ name: 'Other', handle: `oth-${randomUUID().slice(0, 8)}` })).body.id as string;
    expectError(await t.http.get(`/api/v1/agents/${agentId}`).set(as(other, otherOrg)), 404, 'not_found');
    expectError(await t.http.post(`/api/v1/agents/${agentId}/pause`).set(as(other, otherOrg)), 404, 'not_found');
    expectError(await t.http.post(`/api/v1/api-keys/${keyId}/revoke`).set(as(other, otherOrg)), 404, 'not_found');
    const agent = (await t.http.get(`/api/v1/agents/${agentId}`).set(as(login))).body;
    expect(agent.paused).toBe(false);
    expect((await t.http.get('/api/v1/api-keys').set(as(login))).body.find((k: { id: string }) => k.id === keyId).revokedAt).toBeNull();
  });

  describe('pages', () => {
    const sections = ['', '/keys', '/agents', '/webhooks', '/checkouts', '/escrows', '/invoices', '/offerings', '/verification'];

    it('the owner gets every page (strict CSP, no-store); another address gets 404 for every page of it; no session → the sign-in page', async () => {
      const agentId = (await t.http.post('/api/v1/agents').set(as(login)).send({ slug: `pg-${randomUUID().slice(0, 8)}`, ownerAddress: owner.address })).body.id as string;
      const pages = [...sections.map((s) => `/console/orgs/${orgId}${s}`), `/console/orgs/${orgId}/agents/${agentId}`];
      for (const path of pages) {
        const mine = await t.http.get(path).set('Cookie', login.cookie);
        expect({ path, status: mine.status }).toEqual({ path, status: 200 });
        expect(mine.headers['content-security-policy']).toMatch(/script-src 'self'/);
        expect(mine.headers['cache-control']).toBe('no-store');
        expect(mine.text).toContain(`data-csrf="${login.csrf}"`);
        const theirs = await t.http.get(path).set('Cookie', other.cookie);
        expect({ path, status: theirs.status }).toEqual({ path, status: 404 });
        expect(theirs.text).not.toContain('Owner Co');
        const anonymous = await t.http.get(path);
        expect({ path, status: anonymous.status, location: anonymous.headers.location }).toEqual({ path, status: 303, location: '/console' });
      }
      expect((await t.http.get(`/console/orgs/${randomUUID()}`).set('Cookie', login.cookie)).status).toBe(404);
      expect((await t.http.get(`/console/orgs/${orgId}/nothing`).set('Cookie', login.cookie)).status).toBe(404);
      const signIn = await t.http.get('/console');
      expect(signIn.status).toBe(200);
      expect(signIn.text).toContain('data-page="signin"');
      const home = await t.http.get('/console').set('Cookie', login.cookie);
      expect(home.text).toContain('Owner Co');
      expect((await t.http.get('/console').set('Cookie', other.cookie)).text).not.toContain('Owner Co');
    });
  });

  it('creates an OAuth client (secret once) whose tokens work; lists it without the secret; revokes it at once; another organisation gets 404; an API key gets 403', async () => {
    const created = await t.http.post('/api/v1/oauth-clients').set(as(login)).send({ scopes: ['checkout:read'] });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({ clientId: expect.stringMatching(/^bac_/), clientSecret: expect.any(String), scopes: ['checkout:read'], revokedAt: null });
    const grant = () => t.http.post('/oauth/token').send({ grant_type: 'client_credentials', client_id: created.body.clientId, client_secret: created.body.clientSecret });
    const token = (await grant().expect(200)).body.access_token as string;
    expect((await t.http.get('/api/v1/checkout-sessions').set('Authorization', `Bearer ${token}`)).status).toBe(200);

    const list = await t.http.get('/api/v1/oauth-clients').set(as(login)).expect(200);
    expect(list.body.find((c: { clientId: string }) => c.clientId === created.body.clientId)).toMatchObject({ scopes: ['checkout:read'], revokedAt: null });
    expect(JSON.stringify(list.body)).not.toContain(created.body.clientSecret);

    const otherOrg = (await t.http.post('/console/api/organizations').set(consoleHeaders(other)).send({ name: 'Other Co', handle: `other-${randomUUID().slice(0, 8)}` }).expect(200)).body.id as string;
    expectError(await t.http.post(`/api/v1/oauth-clients/${created.body.clientId}/revoke`).set(as(other, otherOrg)), 404, 'not_found');
    expect((await t.http.get('/api/v1/oauth-clients').set(as(other, otherOrg)).expect(200)).body).toEqual([]);
    const key = (await t.http.post('/api/v1/api-keys').set(as(login)).send({ scopes: ['checkout:*'] }).expect(200)).body.secret as string;
    expect(expectError(await t.http.post('/api/v1/oauth-clients').set('X-Api-Key', key).send({ scopes: ['checkout:*'] }), 403, 'forbidden')).toMatchObject({ reason: 'console_session_required' });
    expect((await t.http.get('/api/v1/checkout-sessions').set('Authorization', `Bearer ${token}`)).status).toBe(200);

    const revoked = await t.http.post(`/api/v1/oauth-clients/${created.body.clientId}/revoke`).set(as(login));
    expect(revoked.status).toBe(200);
    expect(revoked.body.revokedAt).toEqual(expect.any(String));
    expectError(await t.http.get('/api/v1/checkout-sessions').set('Authorization', `Bearer ${token}`), 401, 'unauthorized');
    expectError(await grant(), 401, 'unauthorized');
  });
});
