import { randomUUID } from 'node:crypto';
import { BaseWallet, Wallet } from 'ethers';
import { createTestApp, TestApp } from '../support/app';
import { consoleHeaders, consoleSignIn, siweMessage } from '../support/console';
import { expectError } from '../support/errors';
import { createOrg } from '../support/factories';

jest.setTimeout(60_000);

/**
 * The console's sign-in and sessions (docs/architecture.md §19): SIWE (EIP-4361) with a single-use
 * server nonce, server-side revocable sessions in an HttpOnly SameSite=Strict cookie, a CSRF token
 * on every request, and a `console` principal per owned organisation through the one auth guard.
 */
describe('console sign-in and sessions', () => {
  let t: TestApp;
  const alice = Wallet.createRandom();
  const mallory = Wallet.createRandom();

  beforeAll(async () => {
    t = await createTestApp({ REDIS_PREFIX: `${process.env.REDIS_PREFIX}-${randomUUID().slice(0, 8)}` });
  });
  afterAll(() => t.close());

  const nonce = async () => (await t.http.get('/console/api/nonce').expect(200)).body as { nonce: string; domain: string; uri: string; chainId: number };
  const signIn = async (wallet: BaseWallet, message: string, signature?: string) =>
    t.http.post('/console/api/sign-in').send({ message, signature: signature ?? (await wallet.signMessage(message)) });

  describe('sign-in', () => {
    it('opens a session: HttpOnly SameSite=Strict cookie (not Secure on http localhost), CSRF token, 12 h', async () => {
      const n = await nonce();
      const api = new URL(process.env.API_BASE_URL ?? 'http://localhost:3000');
      expect(n).toMatchObject({ domain: api.host, uri: `${api.origin}/console`, chainId: 31337 });
      const res = await signIn(alice, siweMessage(alice, n.nonce, n));
      expect(res.status).toBe(200);
      expect(res.body.address).toBe(alice.address);
      expect(res.body.csrfToken).toMatch(/^[0-9a-f]{64}$/);
      const cookie = ([] as string[]).concat(res.headers['set-cookie']).find((c) => c.startsWith('pcp_console='))!;
      expect(cookie).toMatch(/HttpOnly/);
      expect(cookie).toMatch(/SameSite=Strict/);
      expect(cookie).not.toMatch(/Secure/);
      expect(cookie).toMatch(/Path=\//);
      const session = await t.http.get('/console/api/session').set({ Cookie: cookie.split(';')[0], 'X-CSRF-Token': res.body.csrfToken });
      expect(session.status).toBe(200);
      expect(session.body).toMatchObject({ address: alice.address, organizations: [] });
      const hours = (Date.parse(session.body.expiresAt) - Date.now()) / 3600_000;
      expect(hours).toBeGreaterThan(11.9);
      expect(hours).toBeLessThanOrEqual(12);
    });

    it('a replayed message (its nonce used) is refused', async () => {
      const n = await nonce();
      const message = siweMessage(alice, n.nonce, n);
      const signature = await alice.signMessage(message);
      expect((await signIn(alice, message, signature)).status).toBe(200);
      const replay = await signIn(alice, message, signature);
      expect(expectError(replay, 401, 'unauthorized')).toMatchObject({ reason: 'nonce_invalid' });
    });

    it('a used nonce in a freshly signed message is refused, and so is a nonce the server never issued', async () => {
      const n = await nonce();
      expect((await signIn(alice, siweMessage(alice, n.nonce, n))).status).toBe(200);
      expect(expectError(await signIn(alice, siweMessage(alice, n.nonce, n, { statement: 'again' })), 401, 'unauthorized')).toMatchObject({ reason: 'nonce_invalid' });
      expect(expectError(await signIn(alice, siweMessage(alice, 'abcdefgh12345678', n)), 401, 'unauthorized')).toMatchObject({ reason: 'nonce_invalid' });
    });

    it('a nonce older than 5 minutes is refused', async () => {
      const n = await nonce();
      await t.dataSource.query(`UPDATE console_nonces SET expires_at = now() - interval '1 second' WHERE nonce = $1`, [n.nonce]);
      expect(expectError(await signIn(alice, siweMessage(alice, n.nonce, n)), 401, 'unauthorized')).toMatchObject({ reason: 'nonce_invalid' });
    });

    it.each([
      ['wrong_domain', { domain: 'evil.example' }],
      ['wrong_uri', { uri: 'https://evil.example/console' }],
      ['wrong_chain', { chainId: 1 }],
      ['expiration_required', { expirationTime: undefined }],
      ['expired', { issuedAt: new Date(Date.now() - 120_000).toISOString(), expirationTime: new Date(Date.now() - 60_000).toISOString() }],
    ])('refuses %s, and leaves the nonce unused', async (reason, overrides) => {
      const n = await nonce();
      const res = await signIn(alice, siweMessage(alice, n.nonce, n, overrides as object));
      expect(expectError(res, 401, 'unauthorized')).toMatchObject({ reason });
      expect((await signIn(alice, siweMessage(alice, n.nonce, n))).status).toBe(200);
    });

    it("a signature by another wallet is refused (bad_signature)", async () => {
      const n = await nonce();
      const message = siweMessage(alice, n.nonce, n);
      const res = await signIn(alice, message, await mallory.signMessage(message));
      expect(expectError(res, 401, 'unauthorized')).toMatchObject({ reason: 'bad_signature' });
    });

    it('a malformed body is a 400', async () => {
      expectError(await t.http.post('/console/api/sign-in').send({ message: 'hello', signature: '0x12' }), 400, 'invalid_request');
    });
  });

  describe('sessions', () => {
    it('an expired session is refused', async () => {
      const login = await consoleSignIn(t, alice);
      expect((await t.http.get('/console/api/session').set(consoleHeaders(login))).status).toBe(200);
      await t.dataSource.query(`UPDATE console_sessions SET expires_at = now() - interval '1 second' WHERE lower(address) = lower($1)`, [alice.address]);
      expectError(await t.http.get('/console/api/session').set(consoleHeaders(login)), 401, 'unauthorized');
    });

    it('sign-out revokes the session at once (and clears the cookie); a revoked session is refused', async () => {
      const login = await consoleSignIn(t, alice);
      const out = await t.http.post('/console/api/sign-out').set(consoleHeaders(login));
      expect(out.status).toBe(200);
      expect(out.body).toEqual({ address: alice.address, signedOut: true });
      expect(String(out.headers['set-cookie'])).toMatch(/pcp_console=;/);
      expectError(await t.http.get('/console/api/session').set(consoleHeaders(login)), 401, 'unauthorized');
      expectError(await t.http.post('/console/api/organizations').set(consoleHeaders(login)).send({ name: 'x', handle: `h-${randomUUID().slice(0, 8)}` }), 401, 'unauthorized');
    });

    it('a session revoked elsewhere (another replica, the database) is refused on its next request', async () => {
      const login = await consoleSignIn(t, alice);
      const org = (await t.http.post('/console/api/organizations').set(consoleHeaders(login)).send({ name: 'Rev', handle: `rev-${randomUUID().slice(0, 8)}` })).body;
      expect((await t.http.get('/api/v1/me').set(consoleHeaders(login, org.id))).status).toBe(200);
      await t.dataSource.query(`UPDATE console_sessions SET revoked_at = now() WHERE revoked_at IS NULL AND lower(address) = lower($1)`, [alice.address]);
      expectError(await t.http.get('/api/v1/me').set(consoleHeaders(login, org.id)), 401, 'unauthorized');
    });

    it('a cross-site POST without the CSRF token (or with a wrong one) is refused and writes nothing', async () => {
      const login = await consoleSignIn(t, alice);
      const handle = `csrf-${randomUUID().slice(0, 8)}`;
      const noToken = await t.http.post('/console/api/organizations').set({ Cookie: login.cookie, Origin: 'https://evil.example' }).send({ name: 'CSRF', handle });
      expect(expectError(noToken, 403, 'forbidden')).toMatchObject({ reason: 'csrf_token_invalid' });
      const wrong = await t.http.post('/console/api/organizations').set({ Cookie: login.cookie, 'X-CSRF-Token': 'f'.repeat(64) }).send({ name: 'CSRF', handle });
      expect(expectError(wrong, 403, 'forbidden')).toMatchObject({ reason: 'csrf_token_invalid' });
      const org = (await t.http.post('/console/api/organizations').set(consoleHeaders(login)).send({ name: 'Mine', handle: `m-${randomUUID().slice(0, 8)}` })).body;
      const checkout = await t.http.post('/api/v1/checkout-sessions').set({ Cookie: login.cookie, 'X-Console-Organization': org.id }).send({ amount: '5.00', description: 'csrf' });
      expect(expectError(checkout, 403, 'forbidden')).toMatchObject({ reason: 'csrf_token_invalid' });
      expect((await t.dataSource.query(`SELECT 1 FROM organizations WHERE handle = $1`, [handle])).length).toBe(0);
      expect((await t.dataSource.query(`SELECT 1 FROM checkout_sessions WHERE organization_id = $1`, [org.id])).length).toBe(0);
    });

    it('an unknown session cookie is a 401', async () => {
      expectError(await t.http.get('/console/api/session').set({ Cookie: 'pcp_console=' + 'A'.repeat(43), 'X-CSRF-Token': 'a'.repeat(64) }), 401, 'unauthorized');
    });
  });

  describe('organisations and owners', () => {
    it('self-serve: an address creates an organisation (payout address = itself), acts for it through /api/v1 as a console principal', async () => {
      const wallet = Wallet.createRandom();
      const login = await consoleSignIn(t, wallet);
      const created = await t.http.post('/console/api/organizations').set(consoleHeaders(login)).send({ name: 'Shop', handle: `shop-${randomUUID().slice(0, 8)}` });
      expect(created.status).toBe(200);
      expect(created.body.payoutAddress).toBe(wallet.address);
      const session = await t.http.get('/console/api/session').set(consoleHeaders(login));
      expect(session.body.organizations.map((o: { id: string }) => o.id)).toEqual([created.body.id]);
      const me = await t.http.get('/api/v1/me').set(consoleHeaders(login, created.body.id));
      expect(me.status).toBe(200);
      expect(me.body.identity.type).toBe('console');
      expect(me.body.organization.id).toBe(created.body.id);
      const headers = { ...consoleHeaders(login, created.body.id), 'Idempotency-Key': 'console-1' };
      const first = await t.http.post('/api/v1/checkout-sessions').set(headers).send({ amount: '5.00', description: 'from the console' });
      expect(first.status).toBe(200);
      const replay = await t.http.post('/api/v1/checkout-sessions').set(headers).send({ amount: '5.00', description: 'from the console' });
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.body.id).toBe(first.body.id);
    });

    it('at most 5 organisations per address', async () => {
      const wallet = Wallet.createRandom();
      const login = await consoleSignIn(t, wallet);
      const create = () => t.http.post('/console/api/organizations').set(consoleHeaders(login)).send({ name: 'Many', handle: `many-${randomUUID().slice(0, 8)}` });
      const results = await Promise.all(Array.from({ length: 7 }, create));
      expect(results.filter((r) => r.status === 200)).toHaveLength(5);
      for (const r of results.filter((r) => r.status !== 200)) expect(expectError(r, 403, 'forbidden')).toMatchObject({ reason: 'organization_limit' });
    });

    it('an organisation created by the operator is owned by its payout address', async () => {
      const wallet = Wallet.createRandom();
      const org = await createOrg(t.app, { payoutAddress: wallet.address });
      const login = await consoleSignIn(t, wallet);
      expect((await t.http.get('/api/v1/me').set(consoleHeaders(login, org.organizationId))).status).toBe(200);
    });

    it('another address gets 404 for an organisation it does not own, and for a malformed or missing organisation', async () => {
      const owner = Wallet.createRandom();
      const org = await createOrg(t.app, { payoutAddress: owner.address });
      const login = await consoleSignIn(t, mallory);
      expectError(await t.http.get('/api/v1/me').set(consoleHeaders(login, org.organizationId)), 404, 'not_found');
      expectError(await t.http.get('/api/v1/checkout-sessions').set(consoleHeaders(login, org.organizationId)), 404, 'not_found');
      expectError(await t.http.post('/api/v1/checkout-sessions').set(consoleHeaders(login, org.organizationId)).send({ amount: '1.00', description: 'x' }), 404, 'not_found');
      expectError(await t.http.get('/api/v1/me').set(consoleHeaders(login, 'not-a-uuid')), 404, 'not_found');
      expectError(await t.http.get('/api/v1/me').set(consoleHeaders(login)), 404, 'not_found');
    });

    it('an API key on the request wins over a console cookie', async () => {
      const org = await createOrg(t.app);
      const login = await consoleSignIn(t, mallory);
      const me = await t.http.get('/api/v1/me').set({ ...consoleHeaders(login), 'X-Api-Key': org.key });
      expect(me.status).toBe(200);
      expect(me.body.identity.type).toBe('merchant');
    });
  });

  describe('rate limits', () => {
    it('forged sign-ins naming V do not lock V out: 70 from another client address, then V signs in (issue 28 item 3)', async () => {
      const limited = await createTestApp({ REDIS_PREFIX: `${process.env.REDIS_PREFIX}-${randomUUID().slice(0, 8)}`, AUTH_FAILURES_PER_MINUTE: '60', TRUSTED_PROXIES: 'loopback' });
      try {
        const victim = Wallet.createRandom();
        const statuses: number[] = [];
        for (let i = 0; i < 70; i++) {
          const n = (await limited.http.get('/console/api/nonce').expect(200)).body;
          const message = siweMessage(victim, n.nonce, n);
          // Half signed by another key, half with an all-zero signature: none recovers to the victim.
          const signature = i % 2 === 0 ? await mallory.signMessage(message) : `0x${'00'.repeat(65)}`;
          statuses.push((await limited.http.post('/console/api/sign-in').set('X-Forwarded-For', '198.51.100.7').send({ message, signature })).status);
        }
        // Every refusal counted against the forger's client address: its allowance (60 a minute) is spent.
        expect(statuses.slice(0, 60).every((s) => s === 401)).toBe(true);
        expect(statuses.slice(60).every((s) => s === 429)).toBe(true);
        const n = (await limited.http.get('/console/api/nonce').expect(200)).body;
        const message = siweMessage(victim, n.nonce, n);
        const ok = await limited.http.post('/console/api/sign-in').set('X-Forwarded-For', '198.51.100.8').send({ message, signature: await victim.signMessage(message) });
        expect(ok.status).toBe(200);
        expect(ok.body.address).toBe(victim.address);
      } finally {
        await limited.close();
      }
    });

    it("refusals of messages the named address did sign count against it (429 once spent), from any client address", async () => {
      const limited = await createTestApp({ REDIS_PREFIX: `${process.env.REDIS_PREFIX}-${randomUUID().slice(0, 8)}`, AUTH_FAILURES_PER_MINUTE: '3', TRUSTED_PROXIES: 'loopback' });
      try {
        const victim = Wallet.createRandom();
        let ip = 10;
        const attempt = async (signer: Wallet | typeof mallory, nonce?: string) => {
          const n = (await limited.http.get('/console/api/nonce').expect(200)).body;
          const message = siweMessage(victim, nonce ?? n.nonce, n);
          return limited.http.post('/console/api/sign-in').set('X-Forwarded-For', `203.0.113.${ip++}`).send({ message, signature: await signer.signMessage(message) });
        };
        // Forged ones from fresh client addresses: refused, never counted against the victim.
        for (let i = 0; i < 5; i++) expectError(await attempt(mallory), 401, 'unauthorized');
        // The victim's own signatures over an unknown nonce: refused and counted.
        for (let i = 0; i < 3; i++) expect(expectError(await attempt(victim, 'abcdefgh12345678'), 401, 'unauthorized')).toMatchObject({ reason: 'nonce_invalid' });
        const refused = await attempt(victim);
        expectError(refused, 429, 'rate_limited');
        expect(refused.headers['retry-after']).toBeDefined();
      } finally {
        await limited.close();
      }
    });
  });
});
