import { randomUUID } from 'node:crypto';
import { Wallet } from 'ethers';
import { routeOperation } from '../../src/kernel/http';
import { Runner } from '../../src/kernel/runner';
import { Authenticator } from '../../src/kernel/authenticator';
import { AppError } from '../../src/common/errors/app-error';
import { AgentsOperations } from '../../src/modules/agents/agents.operations';
import { OrgsOperations } from '../../src/modules/orgs/orgs.operations';
import { ConsoleAdminController } from '../../src/transports/pages/console/console-admin.controller';
import { ConsoleSessionController } from '../../src/transports/pages/console/console-session.controller';
import { createTestApp, TestApp } from '../support/app';
import { consoleHeaders, consoleSignIn } from '../support/console';
import { expectError } from '../support/errors';
import { routesOf } from '../support/routes';
import { createOrg } from '../support/factories';

jest.setTimeout(60_000);

/**
 * Issue 31, "The console's owner actions are operations": every write of the console is declared in
 * the orgs or agents domain (`kinds: ['console']`) and run through the kernel's steps; the console
 * pages read the session through the API's one authenticator (one failed-auth allowance).
 */
describe('console owner actions are declared operations', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ REDIS_PREFIX: `${process.env.REDIS_PREFIX}-${randomUUID().slice(0, 8)}`, AUTH_FAILURES_PER_MINUTE: '3', TRUSTED_PROXIES: 'loopback' });
  });
  afterAll(() => t.close());

  it.each([
    ...routesOf(ConsoleAdminController, { addOwner: 'add-owner', removeOwner: 'remove-owner', createApiKey: 'create-api-key', revokeApiKey: 'revoke-api-key', createOAuthClient: 'create-oauth-client', revokeOAuthClient: 'revoke-oauth-client' }),
    ...routesOf(ConsoleAdminController, { createAgent: 'create-agent', setPolicy: 'set-agent-policy', pause: 'pause-agent', resume: 'resume-agent', createAgentKey: 'create-agent-key' }),
    ...routesOf(ConsoleSessionController, { createOrganization: 'create-organization' }),
  ])('the console write route of %s states that console-only operation', (name, handler) => {
    expect(routeOperation(handler)).toMatchObject({ name, kinds: ['console'], scopes: [] });
  });

  it('create-organization acts as the signed-in address, pause as the agent owner', () => {
    expect(routeOperation(ConsoleSessionController.prototype.createOrganization)?.consoleActs).toBe('address');
    expect(routeOperation(ConsoleAdminController.prototype.pause)?.consoleActs).toBe('agent-owner');
  });

  it('the runner refuses a console operation to an API key with the body REST answers (403 console_session_required)', async () => {
    const org = await createOrg(t.app);
    const principal = await t.app.get(Authenticator).authenticate({ header: (name: string) => (name.toLowerCase() === 'x-api-key' ? org.key : undefined), ip: '192.0.2.1' } as never);
    const viaRunner = await t.app
      .get(Runner)
      .invoke(t.app.get(OrgsOperations).createApiKey, principal, { scopes: ['checkout:*'] }, undefined)
      .then(() => null, (err: unknown) => err);
    expect(viaRunner).toBeInstanceOf(AppError);
    const rest = expectError(await t.http.post('/api/v1/api-keys').set('X-Api-Key', org.key).send({ scopes: ['checkout:*'] }), 403, 'forbidden');
    expect([(viaRunner as AppError).code, (viaRunner as AppError).details]).toEqual(['forbidden', rest]);
    expect(rest).toMatchObject({ reason: 'console_session_required' });
  });

  it("an agent owner's session runs its agent's operations only: another console operation is 404 through the runner as on REST", async () => {
    const owner = Wallet.createRandom();
    const org = await createOrg(t.app, { payoutAddress: owner.address });
    const login = await consoleSignIn(t, owner);
    const created = await t.http.post('/api/v1/agents').set(consoleHeaders(login, org.organizationId)).send({ slug: `ops-${randomUUID().slice(0, 8)}` });
    expect(created.status).toBe(200);
    const asAgentOwner = { Cookie: login.cookie, 'X-CSRF-Token': login.csrf, 'X-Console-Agent': created.body.id };
    expect((await t.http.post(`/api/v1/agents/${created.body.id}/pause`).set(asAgentOwner).send({})).status).toBe(200);
    expectError(await t.http.post('/api/v1/api-keys').set(asAgentOwner).send({ scopes: ['checkout:*'] }), 404, 'not_found');
    const principal = await t.app.get(Authenticator).session({ header: (name: string) => ({ cookie: login.cookie, 'x-csrf-token': login.csrf, 'x-console-agent': created.body.id })[name.toLowerCase()], ip: '192.0.2.2' } as never, { organization: true });
    const refused = await t.app
      .get(Runner)
      .invoke(t.app.get(OrgsOperations).createApiKey, principal, { scopes: ['checkout:*'] }, undefined)
      .then(() => null, (err: unknown) => err as AppError);
    expect(refused?.code).toBe('not_found');
    const resumed = await t.app.get(Runner).invoke(t.app.get(AgentsOperations).resume, principal, {}, undefined, { id: created.body.id });
    expect((resumed.body as { paused: boolean }).paused).toBe(false);
  });

  it('the console pages read the session under the failed-auth allowance of the API: unknown cookies spend it, then the API answers that address 429', async () => {
    const ip = '198.51.100.77';
    const page = (cookie?: string) => {
      const req = t.http.get('/console').set('X-Forwarded-For', ip);
      return cookie ? req.set('Cookie', cookie) : req;
    };
    // No cookie: the sign-in page, nothing spent.
    for (let i = 0; i < 4; i++) expect((await page()).status).toBe(200);
    // An unknown session cookie: the sign-in page, one failed authentication each.
    for (let i = 0; i < 3; i++) {
      const res = await page(`pcp_console=${randomUUID()}`);
      expect(res.status).toBe(200);
      expect(res.text).toContain('Sign in');
    }
    expectError(await page(`pcp_console=${randomUUID()}`), 429, 'rate_limited');
    // The same allowance as the API's credentials.
    expectError(await t.http.get('/api/v1/me').set('X-Forwarded-For', ip).set('X-Api-Key', 'sk_test_nope'), 429, 'rate_limited');
    // A live session still reads its pages from another address.
    const login = await consoleSignIn(t, Wallet.createRandom());
    const home = await t.http.get('/console').set('X-Forwarded-For', '198.51.100.78').set('Cookie', login.cookie);
    expect(home.status).toBe(200);
    expect(home.text).toContain(login.address);
  });
});
