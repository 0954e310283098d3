import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { MERCHANT_SCOPES } from '../../src/kernel/auth/scopes';
import { createTestApp, TestApp } from '../support/app';

const ROOT = join(__dirname, '..', '..');
const CLI = join(ROOT, 'dist', 'src', 'cli.js');
// Each CLI run boots a Nest application context; testTimeout in a jest project entry is not applied.
jest.setTimeout(120_000);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the compiled CLI with this test process's environment (DATABASE_URL points at the test database). */
function cli(...args: string[]): Promise<CliRun> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { cwd: ROOT, env: process.env, encoding: 'utf8', timeout: 30_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** The one JSON object `--json` must print: stdout is exactly one line holding one JSON object. */
function onlyJson(run: CliRun): Record<string, unknown> {
  const lines = run.stdout.split('\n').filter((l) => l.length > 0);
  expect({ lines: lines.length, stdout: run.stdout, stderr: run.stderr }).toEqual({ lines: 1, stdout: run.stdout, stderr: run.stderr });
  const value: unknown = JSON.parse(lines[0]);
  expect(value).toEqual(expect.any(Object));
  expect(Array.isArray(value)).toBe(false);
  return value as Record<string, unknown>;
}

/** Operator CLI (docs/architecture.md §9), run as the compiled `dist/src/cli.js`; `nest build` is a precondition. */
describe('operator CLI (dist/src/cli.js --json)', () => {
  let t: TestApp;

  beforeAll(async () => {
    if (!existsSync(CLI)) {
      throw new Error(`${CLI} is missing: build first with \`node_modules/.bin/nest build\` (this spec runs the compiled CLI)`);
    }
    t = await createTestApp();
  });
  afterAll(() => t?.close());

  const me = (credential: string) => t.http.get('/api/v1/me').set('Authorization', `Bearer ${credential}`);

  it('org:create, agent:create, key:create (merchant and agent), oauth:client:create each print one JSON object that works', async () => {
    const handle = `cli-${randomUUID().slice(0, 8)}`;
    const orgRun = await cli('org:create', '--name', 'CLI Shop', '--handle', handle, '--payout-address', '0x9965507d1a55bcc2695c58ba16fb37d819b0a4dc', '--json');
    expect(orgRun.code).toBe(0);
    const org = onlyJson(orgRun);
    expect(org).toEqual({ id: expect.stringMatching(UUID), handle, payoutAddress: '0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc' });
    const orgId = org.id as string;

    const merchantRun = await cli('key:create', '--org', orgId, '--type', 'merchant', '--scopes', 'checkout:*,webhooks:read', '--json');
    expect(merchantRun.code).toBe(0);
    const merchant = onlyJson(merchantRun);
    expect(merchant).toEqual({ id: expect.stringMatching(UUID), key: expect.stringMatching(/^bk_live_[0-9A-Za-z]{40,}$/), scopes: ['checkout:*', 'webhooks:read'] });
    const merchantMe = await me(merchant.key as string);
    expect(merchantMe.status).toBe(200);
    expect(merchantMe.body.identity).toEqual({ type: 'merchant', credentialId: merchant.id, agentId: null });
    expect(merchantMe.body.organization).toMatchObject({ id: orgId, name: 'CLI Shop', handle });

    const agentRun = await cli('agent:create', '--org', orgId, '--slug', `bot-${handle}`, '--owner-address', '0x' + '22'.repeat(20), '--json');
    expect(agentRun.code).toBe(0);
    const agent = onlyJson(agentRun);
    expect(agent).toEqual({ id: expect.stringMatching(UUID), slug: `bot-${handle}` });

    const agentKeyRun = await cli('key:create', '--org', orgId, '--type', 'agent', '--agent', agent.id as string, '--scopes', 'agent:pay,checkout:read', '--json');
    expect(agentKeyRun.code).toBe(0);
    const agentKey = onlyJson(agentKeyRun);
    expect(agentKey).toEqual({ id: expect.stringMatching(UUID), key: expect.stringMatching(/^bk_agent_live_[0-9A-Za-z]{40,}$/), scopes: ['agent:pay', 'checkout:read'] });
    const agentMe = await me(agentKey.key as string);
    expect(agentMe.status).toBe(200);
    expect(agentMe.body.identity).toEqual({ type: 'agent', credentialId: agentKey.id, agentId: agent.id });

    const clientRun = await cli('oauth:client:create', '--org', orgId, '--scopes', 'checkout:read', '--json');
    expect(clientRun.code).toBe(0);
    const client = onlyJson(clientRun);
    expect(client).toEqual({ clientId: expect.stringMatching(/^bac_/), clientSecret: expect.stringMatching(/^bacs_/), scopes: ['checkout:read'] });
    const token = await t.http
      .post('/oauth/token')
      .send({ grant_type: 'client_credentials', client_id: client.clientId, client_secret: client.clientSecret });
    expect(token.status).toBe(200);
    const tokenMe = await me(token.body.access_token);
    expect(tokenMe.status).toBe(200);
    expect(tokenMe.body.organization.id).toBe(orgId);

    const rows = await t.dataSource.query('SELECT count(*)::int AS n FROM api_keys WHERE organization_id = $1', [orgId]);
    expect(rows[0].n).toBe(2);
  });

  it('demo:seed prints one JSON object with a merchant key holding every merchant scope', async () => {
    const handle = `demo-${randomUUID().slice(0, 8)}`;
    const run = await cli('demo:seed', '--handle', handle, '--json');
    expect(run.code).toBe(0);
    const seed = onlyJson(run);
    expect(seed).toMatchObject({
      organizationId: expect.stringMatching(UUID),
      handle,
      merchantKey: expect.stringMatching(/^bk_live_/),
      scopes: [...MERCHANT_SCOPES],
      apiUrl: 'http://127.0.0.1:3000',
      swaggerUrl: 'http://127.0.0.1:3000/docs',
      checkoutBaseUrl: 'https://pay.test',
      curl: expect.stringContaining('/api/v1/checkout-sessions'),
    });
    expect(seed.curl).toContain(seed.merchantKey as string);
    const res = await t.http
      .post('/api/v1/checkout-sessions')
      .set('X-Api-Key', seed.merchantKey as string)
      .send({ amount: '25.00', description: 'Demo order' });
    expect(res.status).toBe(200);
    expect(res.body.payUrl).toBe(`https://pay.test/checkout/${res.body.id}`);

    // The demo buyer's organisation: bound to the demo buyer wallet, with escrow scopes only.
    expect(seed.buyerKey).toMatch(/^bk_live_/);
    expect(seed.buyerAddress).toMatch(/^0x[0-9a-fA-F]{40}$/);
    const buyerMe = await t.http.get('/api/v1/me').set('X-Api-Key', seed.buyerKey as string).expect(200);
    expect(buyerMe.body.organization.payoutAddress).toBe(seed.buyerAddress);
    expect(buyerMe.body.scopes).toEqual(['escrow:read', 'escrow:write']);
    // A second seed reuses that organisation (the oldest one with an address is the one bound to it).
    const again = onlyJson(await cli('demo:seed', '--handle', `demo-${randomUUID().slice(0, 8)}`, '--json'));
    const buyerMeAgain = await t.http.get('/api/v1/me').set('X-Api-Key', again.buyerKey as string).expect(200);
    expect(buyerMeAgain.body.organization.id).toBe(buyerMe.body.organization.id);
  });

  it('a bad scope prints a JSON error and exits 2, creating nothing', async () => {
    const org = onlyJson(await cli('org:create', '--name', 'Scopes', '--handle', `sc-${randomUUID().slice(0, 8)}`, '--json'));
    const run = await cli('key:create', '--org', org.id as string, '--type', 'merchant', '--scopes', 'checkout:read,admin:*', '--json');
    expect(run.code).toBe(2);
    const error = onlyJson(run);
    expect(error).toMatchObject({ error: expect.stringContaining('admin:*'), code: 'invalid_request' });
    expect((error.details as { fields: Array<{ param: string }> }).fields[0].param).toBe('scopes');

    const agentScopeOnMerchant = await cli('key:create', '--org', org.id as string, '--type', 'merchant', '--scopes', 'agent:pay', '--json');
    expect(agentScopeOnMerchant.code).toBe(2);
    expect(onlyJson(agentScopeOnMerchant).code).toBe('invalid_request');

    const oauthBad = await cli('oauth:client:create', '--org', org.id as string, '--scopes', 'checkout:delete', '--json');
    expect(oauthBad.code).toBe(2);
    expect(onlyJson(oauthBad).code).toBe('invalid_request');

    const rows = await t.dataSource.query(
      `SELECT (SELECT count(*)::int FROM api_keys WHERE organization_id = $1) + (SELECT count(*)::int FROM oauth_clients WHERE organization_id = $1) AS n`,
      [org.id],
    );
    expect(rows[0].n).toBe(0);
  });

  it.each([
    [['org:create', '--name', 'No handle'], '--handle'],
    [['key:create', '--type', 'merchant', '--scopes', 'checkout:read'], '--org'],
    [['key:create', '--org', '00000000-0000-0000-0000-000000000000', '--type', 'merchant'], '--scopes'],
    [['oauth:client:create', '--scopes', 'checkout:read'], '--org'],
  ])('a missing flag (%j) exits 2 with a JSON error naming it', async (args, flag) => {
    const run = await cli(...args, '--json');
    expect(run.code).toBe(2);
    expect(onlyJson(run).error).toContain(flag);
  });

  it('a missing flag without --json exits 2 and writes the error to stderr only', async () => {
    const run = await cli('org:create', '--handle', `nf-${randomUUID().slice(0, 8)}`);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain('--name');
  });

  it('an unknown command exits 2 with a JSON error', async () => {
    const run = await cli('org:destroy', '--json');
    expect(run.code).toBe(2);
    expect(onlyJson(run).error).toContain('org:destroy');
  });
});
