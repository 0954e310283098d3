import { createHash } from 'node:crypto';
import { createTestApp, TestApp } from '../support/app';
import { OrgsService } from '../../src/modules/orgs/orgs.service';
import { expectError } from '../support/errors';
import { waitFor } from '../support/wait';
import { createAgentKey, createKey, createOAuthClient, createOrg, TestOrg } from '../support/factories';

// testTimeout in a jest project entry is not applied (it is a global option); suites share the machine.
jest.setTimeout(30_000);

/** Auth matrix (docs/architecture.md §3, docs/decisions.md): credentials, OAuth, scopes, tenancy, public routes. */
describe('authentication and scopes', () => {
  let t: TestApp;
  let org: TestOrg;

  const createSession = (key: string) =>
    t.http.post('/api/v1/checkout-sessions').set('X-Api-Key', key).send({ amount: '10.00', description: 'auth matrix' });

  beforeAll(async () => {
    t = await createTestApp();
    org = await createOrg(t.app);
  });
  afterAll(() => t.close());

  describe('credentials', () => {
    it('no credential → 401 unauthorized with WWW-Authenticate', async () => {
      const res = await t.http.get('/api/v1/me');
      expectError(res, 401, 'unauthorized');
      expect(res.headers['www-authenticate']).toBe('Bearer realm="api"');
    });

    it('a well-formed bk_live_ key that does not exist → 401, via either header', async () => {
      const unknown = 'bk_live_' + 'A'.repeat(43);
      expectError(await t.http.get('/api/v1/me').set('X-Api-Key', unknown), 401, 'unauthorized');
      expectError(await t.http.get('/api/v1/me').set('Authorization', `Bearer ${unknown}`), 401, 'unauthorized');
      expectError(await t.http.get('/api/v1/me').set('X-Api-Key', 'bk_agent_live_' + 'B'.repeat(43)), 401, 'unauthorized');
      expectError(await t.http.get('/api/v1/me').set('X-Api-Key', 'bat_' + 'C'.repeat(43)), 401, 'unauthorized');
    });

    it('a credential without a known prefix → 401 even when its hash would match nothing else', async () => {
      expectError(await t.http.get('/api/v1/me').set('X-Api-Key', org.key.replace('bk_live_', 'bk_test_')), 401, 'unauthorized');
    });

    it("a secret whose prefix does not match its key's kind → 401", async () => {
      const agent = await createAgentKey(t.app, org.organizationId, ['checkout:read']);
      const asMerchant = agent.key.replace('bk_agent_live_', 'bk_live_');
      // Point the agent key's stored hash at the bk_live_ form, so only the kind check can refuse it.
      await t.dataSource.query('UPDATE api_keys SET secret_hash = $1 WHERE secret_hash = $2', [
        createHash('sha256').update(asMerchant).digest(),
        createHash('sha256').update(agent.key).digest(),
      ]);
      expectError(await t.http.get('/api/v1/me').set('X-Api-Key', asMerchant), 401, 'unauthorized');
    });

    it.each([
      ['Basic x', 'a Basic credential'],
      ['Bearer', 'Bearer with no token'],
      ['Bearer a b', 'Bearer with two tokens'],
    ])('Authorization: %s (%s) → 401', async (header) => {
      expectError(await t.http.get('/api/v1/me').set('Authorization', header), 401, 'unauthorized');
    });

    it('a valid key in Authorization without the Bearer scheme → 401', async () => {
      expectError(await t.http.get('/api/v1/me').set('Authorization', org.key), 401, 'unauthorized');
      expectError(await t.http.get('/api/v1/me').set('Authorization', `Token ${org.key}`), 401, 'unauthorized');
    });

    it('a malformed Authorization header is refused even beside a valid X-Api-Key', async () => {
      const res = await t.http.get('/api/v1/me').set('X-Api-Key', org.key).set('Authorization', 'Basic x');
      expectError(res, 401, 'unauthorized');
    });

    it('X-Api-Key and Authorization both present and different → 401, even when both are valid', async () => {
      const other = await createKey(t.app, org.organizationId, ['checkout:read']);
      const res = await t.http.get('/api/v1/me').set('X-Api-Key', org.key).set('Authorization', `Bearer ${other}`);
      expectError(res, 401, 'unauthorized');
    });

    it('X-Api-Key and Authorization both present and equal → 200', async () => {
      const res = await t.http.get('/api/v1/me').set('X-Api-Key', org.key).set('Authorization', `Bearer ${org.key}`);
      expect(res.status).toBe(200);
      expect(res.body.organization.id).toBe(org.organizationId);
    });

    it('a merchant key works as Authorization: Bearer as well as X-Api-Key', async () => {
      const res = await t.http.get('/api/v1/me').set('Authorization', `Bearer ${org.key}`);
      expect(res.status).toBe(200);
      expect(res.body.identity.type).toBe('merchant');
    });

    it('a revoked key → 401 from the next request, though the key was just used (and cached)', async () => {
      const key = await createKey(t.app, org.organizationId, ['checkout:read']);
      expect((await t.http.get('/api/v1/me').set('X-Api-Key', key)).status).toBe(200);
      const hash = createHash('sha256').update(key).digest();
      const [{ id }] = await t.dataSource.query('SELECT id FROM api_keys WHERE secret_hash = $1', [hash]);
      await t.app.get(OrgsService).revokeApiKey(id);
      expectError(await t.http.get('/api/v1/me').set('X-Api-Key', key), 401, 'unauthorized');
    });

    it('an agent key (bk_agent_live_) works on GET /api/v1/me and shows identity.type agent', async () => {
      const agent = await createAgentKey(t.app, org.organizationId, ['checkout:read', 'agent:pay']);
      expect(agent.key.startsWith('bk_agent_live_')).toBe(true);
      const res = await t.http.get('/api/v1/me').set('X-Api-Key', agent.key);
      expect(res.status).toBe(200);
      expect(res.body.identity).toEqual({ type: 'agent', credentialId: expect.any(String), agentId: agent.agentId });
      expect(res.body.organization.id).toBe(org.organizationId);
      expect(res.body.scopes).toEqual(['checkout:read', 'agent:pay']);
      const viaBearer = await t.http.get('/api/v1/me').set('Authorization', `Bearer ${agent.key}`);
      expect(viaBearer.status).toBe(200);
      expect(viaBearer.body.identity.type).toBe('agent');
    });
  });

  describe('OAuth client credentials', () => {
    let client: { clientId: string; clientSecret: string };
    beforeAll(async () => {
      client = await createOAuthClient(t.app, org.organizationId, ['checkout:read', 'webhooks:write']);
    });

    const expectToken = (res: { status: number; body: Record<string, unknown> }, scope: string) => {
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ access_token: expect.stringMatching(/^bat_[0-9A-Za-z]{40,}$/), token_type: 'Bearer', expires_in: 3600, scope });
    };

    it('form-encoded request → a bat_ token that works as Bearer', async () => {
      const res = await t.http
        .post('/oauth/token')
        .type('form')
        .send({ grant_type: 'client_credentials', client_id: client.clientId, client_secret: client.clientSecret });
      expectToken(res, 'checkout:read webhooks:write');
      const me = await t.http.get('/api/v1/me').set('Authorization', `Bearer ${res.body.access_token}`);
      expect(me.status).toBe(200);
      expect(me.body.identity.type).toBe('oauth');
      expect(me.body.organization.id).toBe(org.organizationId);
      expect(me.body.scopes).toEqual(['checkout:read', 'webhooks:write']);
      expect((await t.http.get('/api/v1/checkout-sessions').set('Authorization', `Bearer ${res.body.access_token}`)).status).toBe(200);
    });

    it('JSON request with a narrower scope → a token limited to that scope', async () => {
      const res = await t.http
        .post('/oauth/token')
        .send({ grant_type: 'client_credentials', client_id: client.clientId, client_secret: client.clientSecret, scope: 'checkout:read' });
      expectToken(res, 'checkout:read');
      const token = res.body.access_token as string;
      expect((await t.http.get('/api/v1/checkout-sessions').set('X-Api-Key', token)).status).toBe(200);
      const me = await t.http.get('/api/v1/me').set('Authorization', `Bearer ${token}`);
      expect(me.body.scopes).toEqual(['checkout:read']);
      const post = await t.http
        .post('/api/v1/checkout-sessions')
        .set('Authorization', `Bearer ${token}`)
        .send({ amount: '1', description: 'x' });
      expectError(post, 403, 'missing_scope');
    });

    it('a requested scope outside the client scopes → 400 invalid_request naming scope', async () => {
      const res = await t.http
        .post('/oauth/token')
        .send({ grant_type: 'client_credentials', client_id: client.clientId, client_secret: client.clientSecret, scope: 'checkout:read checkout:write' });
      const details = expectError(res, 400, 'invalid_request');
      expect(details?.fields).toEqual([expect.objectContaining({ param: 'scope' })]);
    });

    it('a wrong client secret → 401 unauthorized; an unknown client → 401 too', async () => {
      const wrong = await t.http
        .post('/oauth/token')
        .send({ grant_type: 'client_credentials', client_id: client.clientId, client_secret: client.clientSecret + 'x' });
      expectError(wrong, 401, 'unauthorized');
      const unknown = await t.http
        .post('/oauth/token')
        .send({ grant_type: 'client_credentials', client_id: 'bac_nope', client_secret: client.clientSecret });
      expectError(unknown, 401, 'unauthorized');
    });

    it('a client_id with a NUL character → 400 naming client_id, not a 500', async () => {
      const res = await t.http
        .post('/oauth/token')
        .type('form')
        .send({ grant_type: 'client_credentials', client_id: 'bac_\u0000', client_secret: client.clientSecret });
      expect(expectError(res, 400, 'invalid_request')?.fields).toEqual([expect.objectContaining({ param: 'client_id' })]);
    });

    it('a grant type other than client_credentials → 400', async () => {
      const res = await t.http
        .post('/oauth/token')
        .send({ grant_type: 'password', client_id: client.clientId, client_secret: client.clientSecret });
      expectError(res, 400, 'invalid_request');
    });

    // The expiry is moved by hand in SQL: the credential cache honours the token's own expiry (unit test
    // of CredentialCache) and notices a hand edit within CREDENTIAL_CACHE_TTL_MS (docs/decisions.md).
    it('an expired bat_ token → 401', async () => {
      const res = await t.http
        .post('/oauth/token')
        .send({ grant_type: 'client_credentials', client_id: client.clientId, client_secret: client.clientSecret });
      const token = res.body.access_token as string;
      expect((await t.http.get('/api/v1/me').set('Authorization', `Bearer ${token}`)).status).toBe(200);
      const hash = createHash('sha256').update(token).digest();
      const updated = await t.dataSource.query(
        `UPDATE oauth_tokens SET expires_at = now() - interval '1 second' WHERE token_hash = $1 RETURNING id`,
        [hash],
      );
      expect(updated[0]).toHaveLength(1);
      const me = () => t.http.get('/api/v1/me').set('Authorization', `Bearer ${token}`);
      await waitFor(async () => (await me()).status === 401, { timeoutMs: 10_000, label: 'the expired token refused' });
      expectError(await me(), 401, 'unauthorized');
    });
  });

  describe('scopes', () => {
    it('checkout:* grants read and write', async () => {
      const key = await createKey(t.app, org.organizationId, ['checkout:*']);
      const created = await createSession(key);
      expect(created.status).toBe(200);
      expect((await t.http.get(`/api/v1/checkout-sessions/${created.body.id}`).set('X-Api-Key', key)).status).toBe(200);
      expect((await t.http.get('/api/v1/checkout-sessions').set('X-Api-Key', key)).status).toBe(200);
    });

    it('checkout:write implies checkout:read', async () => {
      const key = await createKey(t.app, org.organizationId, ['checkout:write']);
      const created = await createSession(key);
      expect(created.status).toBe(200);
      expect((await t.http.get(`/api/v1/checkout-sessions/${created.body.id}`).set('X-Api-Key', key)).status).toBe(200);
      expect((await t.http.get('/api/v1/checkout-sessions').set('X-Api-Key', key)).status).toBe(200);
    });

    it('checkout:read reads but cannot POST → 403 missing_scope, details.required = [checkout:write]', async () => {
      const key = await createKey(t.app, org.organizationId, ['checkout:read']);
      expect((await t.http.get('/api/v1/checkout-sessions').set('X-Api-Key', key)).status).toBe(200);
      const before = await t.dataSource.query('SELECT count(*)::int AS n FROM checkout_sessions WHERE organization_id = $1', [org.organizationId]);
      const res = await createSession(key);
      const details = expectError(res, 403, 'missing_scope');
      expect(details?.required).toEqual(['checkout:write']);
      expect(details?.granted).toEqual(['checkout:read']);
      const after = await t.dataSource.query('SELECT count(*)::int AS n FROM checkout_sessions WHERE organization_id = $1', [org.organizationId]);
      expect(after[0].n).toBe(before[0].n);
    });

    it('a key with only webhooks:read cannot list, read or create checkouts', async () => {
      const key = await createKey(t.app, org.organizationId, ['webhooks:read']);
      const session = await createSession(org.key);
      const list = await t.http.get('/api/v1/checkout-sessions').set('X-Api-Key', key);
      expect(expectError(list, 403, 'missing_scope')?.required).toEqual(['checkout:read']);
      const get = await t.http.get(`/api/v1/checkout-sessions/${session.body.id}`).set('X-Api-Key', key);
      expect(expectError(get, 403, 'missing_scope')?.required).toEqual(['checkout:read']);
      expectError(await createSession(key), 403, 'missing_scope');
      expect((await t.http.get('/api/v1/me').set('X-Api-Key', key)).status).toBe(200);
    });
  });

  describe('tenancy', () => {
    it("another organisation's checkout session → 404 not_found and never in its list", async () => {
      const other = await createOrg(t.app);
      const theirs = await createSession(other.key);
      expect(theirs.status).toBe(200);
      const mine = await createSession(org.key);
      expect(mine.status).toBe(200);

      expectError(await t.http.get(`/api/v1/checkout-sessions/${theirs.body.id}`).set('X-Api-Key', org.key), 404, 'not_found');
      expect((await t.http.get(`/api/v1/checkout-sessions/${theirs.body.id}`).set('X-Api-Key', other.key)).status).toBe(200);

      const ids: string[] = [];
      let cursor: string | null = null;
      do {
        const page: { status: number; body: { data: Array<{ id: string }>; nextCursor: string | null } } = await t.http
          .get('/api/v1/checkout-sessions')
          .query({ limit: 100, ...(cursor ? { starting_after: cursor } : {}) })
          .set('X-Api-Key', org.key);
        expect(page.status).toBe(200);
        ids.push(...page.body.data.map((s) => s.id));
        cursor = page.body.nextCursor;
      } while (cursor);
      expect(ids).toContain(mine.body.id);
      expect(ids).not.toContain(theirs.body.id);

      const theirList = await t.http.get('/api/v1/checkout-sessions').set('X-Api-Key', other.key);
      expect(theirList.body.data.map((s: { id: string }) => s.id)).toEqual([theirs.body.id]);
    });
  });

  describe('GET /api/v1/me', () => {
    it('returns identity, organisation, scopes (as granted) and verification snapshot', async () => {
      const payout = '0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc';
      const own = await createOrg(t.app, { scopes: ['checkout:*', 'webhooks:read'], payoutAddress: payout.toLowerCase() });
      const res = await t.http.get('/api/v1/me').set('X-Api-Key', own.key);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        identity: { type: 'merchant', credentialId: own.keyId, agentId: null },
        organization: { id: own.organizationId, name: 'Test Org', handle: expect.stringMatching(/^org-/), payoutAddress: payout },
        scopes: ['checkout:*', 'webhooks:read'],
        verification: { status: 'unverified' },
      });
    });
  });

  describe('public routes', () => {
    it('GET /api/v1/fees/quote needs no credential', async () => {
      const res = await t.http.get('/api/v1/fees/quote').query({ amount: '12.5', source: 'invoice' });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ source: 'invoice', grossAmount: '12.50', feeAmount: '0.00', netAmount: '12.50', bps: 0, currency: 'USDC' });
    });

    it('GET /health/live needs no credential', async () => {
      const res = await t.http.get('/health/live');
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ status: 'ok' });
    });

    it('POST /oauth/token needs no credential (its own client authentication only)', async () => {
      const res = await t.http.post('/oauth/token').send({ grant_type: 'client_credentials', client_id: 'bac_x', client_secret: 'y' });
      expectError(res, 401, 'unauthorized');
      expect(res.body.error).toBe('Invalid client credentials');
    });
  });
});
