import { randomUUID } from 'node:crypto';
import { Wallet } from 'ethers';
import { createTestApp, TestApp } from '../support/app';
import { consoleHeaders, consoleSignIn, siweMessage } from '../support/console';
import { expectError } from '../support/errors';
import { createOrg } from '../support/factories';

jest.setTimeout(60_000);

/**
 * Secrets are never cacheable (issue 28 item 5): every response that carries an API key, an agent
 * key, an OAuth client secret or access token, or a webhook secret sends `Cache-Control: no-store`,
 * on REST, the console and MCP.
 */
describe('responses carrying a secret are not stored', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ REDIS_PREFIX: `${process.env.REDIS_PREFIX}-${randomUUID().slice(0, 8)}` });
  });
  afterAll(() => t.close());

  it('console: merchant key, agent key, OAuth client; REST: its token, the webhook secret; MCP: the webhook secret', async () => {
    const login = await consoleSignIn(t, Wallet.createRandom());
    const orgId = (await t.http.post('/console/api/organizations').set(consoleHeaders(login)).send({ name: 'Secret Co', handle: `sec-${randomUUID().slice(0, 8)}` }).expect(200)).body.id as string;
    const as = consoleHeaders(login, orgId);

    const key = await t.http.post('/api/v1/api-keys').set(as).send({ scopes: ['webhooks:*', 'checkout:read'] });
    expect([key.status, key.headers['cache-control']]).toEqual([200, 'no-store']);
    const agent = (await t.http.post('/api/v1/agents').set(as).send({ slug: `sec-${randomUUID().slice(0, 8)}` }).expect(200)).body;
    const agentKey = await t.http.post(`/api/v1/agents/${agent.id}/keys`).set(as).send({ scopes: ['agent:balance:read'] });
    expect([agentKey.status, agentKey.headers['cache-control']]).toEqual([200, 'no-store']);
    const client = await t.http.post('/api/v1/oauth-clients').set(as).send({ scopes: ['checkout:read'] });
    expect([client.status, client.headers['cache-control']]).toEqual([200, 'no-store']);
    const token = await t.http.post('/oauth/token').send({ grant_type: 'client_credentials', client_id: client.body.clientId, client_secret: client.body.clientSecret });
    expect([token.status, token.headers['cache-control']]).toEqual([200, 'no-store']);

    const webhook = await t.http.put('/api/v1/webhook-endpoints').set('X-Api-Key', key.body.secret).send({ url: 'http://127.0.0.1:9/hooks' });
    expect(webhook.body.secret).toMatch(/^whsec_/);
    expect([webhook.status, webhook.headers['cache-control']]).toEqual([200, 'no-store']);

    const org = await createOrg(t.app);
    const mcp = await t.http
      .post('/mcp')
      .set('X-Api-Key', org.key)
      .set('Accept', 'application/json, text/event-stream')
      .send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'svc_webhook_endpoint_put', arguments: { url: 'http://127.0.0.1:9/hooks', rotateSecret: true } } });
    expect(mcp.status).toBe(200);
    expect(JSON.stringify(mcp.body)).toContain('whsec_');
    expect(mcp.headers['cache-control']).toBe('no-store');
  });
});

/**
 * Over HTTPS the console cookie is `__Host-`-prefixed (Secure, Path=/, no Domain: a sibling host
 * cannot set it), and a request carrying two console cookies is refused.
 */
describe('the console cookie', () => {
  it('is __Host-pcp_console over https; the plain name is not read there; two console cookies are refused', async () => {
    const t = await createTestApp({ REDIS_PREFIX: `${process.env.REDIS_PREFIX}-${randomUUID().slice(0, 8)}`, API_BASE_URL: 'https://console.example.test' });
    try {
      const wallet = Wallet.createRandom();
      const n = (await t.http.get('/console/api/nonce').expect(200)).body;
      const message = siweMessage(wallet, n.nonce, n);
      const res = await t.http.post('/console/api/sign-in').send({ message, signature: await wallet.signMessage(message) });
      expect(res.status).toBe(200);
      const setCookie = ([] as string[]).concat(res.headers['set-cookie'] ?? []);
      expect(setCookie).toHaveLength(1);
      expect(setCookie[0]).toMatch(/^__Host-pcp_console=[0-9A-Za-z]+;/);
      expect(setCookie[0]).toMatch(/; Secure/);
      expect(setCookie[0]).toMatch(/; Path=\//);
      expect(setCookie[0]).not.toMatch(/Domain=/i);
      const cookie = setCookie[0].split(';')[0];
      const token = cookie.split('=')[1];
      const csrf = res.body.csrfToken as string;
      expect((await t.http.get('/console/api/session').set({ Cookie: cookie, 'X-CSRF-Token': csrf })).status).toBe(200);
      // The unprefixed name (which a sibling subdomain could plant) is not a session here.
      expectError(await t.http.get('/console/api/session').set({ Cookie: `pcp_console=${token}`, 'X-CSRF-Token': csrf }), 401, 'unauthorized');
      // Two console cookies: refused, whichever comes first.
      for (const both of [`pcp_console=${token}; ${cookie}`, `${cookie}; __Host-pcp_console=AAAAAAAAAAAAAAAAAAAAAAAA`, `${cookie}; ${cookie}`]) {
        expect(expectError(await t.http.get('/console/api/session').set({ Cookie: both, 'X-CSRF-Token': csrf }), 401, 'unauthorized')).toMatchObject({ reason: 'ambiguous_session_cookie' });
      }
      expect((await t.http.get('/console').set('Cookie', `pcp_console=${token}; ${cookie}`)).status).toBe(401);
    } finally {
      await t.close();
    }
  });

  it('over http on localhost (the demo) keeps the plain name, and two of them are refused too', async () => {
    const t = await createTestApp({ REDIS_PREFIX: `${process.env.REDIS_PREFIX}-${randomUUID().slice(0, 8)}` });
    try {
      const login = await consoleSignIn(t, Wallet.createRandom());
      expect(login.setCookie).toMatch(/^pcp_console=/);
      expect((await t.http.get('/console/api/session').set(consoleHeaders(login))).status).toBe(200);
      const twice = { ...consoleHeaders(login), Cookie: `${login.cookie}; ${login.cookie}` };
      expect(expectError(await t.http.get('/console/api/session').set(twice), 401, 'unauthorized')).toMatchObject({ reason: 'ambiguous_session_cookie' });
    } finally {
      await t.close();
    }
  });
});
