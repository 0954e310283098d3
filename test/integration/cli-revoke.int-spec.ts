import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { anvilKey } from '@lib/chain';
import { Wallet } from 'ethers';
import { createTestApp, TestApp } from '../support/app';
import { expectError } from '../support/errors';
import { createOAuthClient, createOrg } from '../support/factories';

const ROOT = join(__dirname, '..', '..');
const CLI = join(ROOT, 'dist', 'src', 'cli.js');
jest.setTimeout(120_000);

interface CliRun {
  code: number;
  json: Record<string, unknown>;
  output: string;
}

/** Runs the compiled CLI with --json; `env` entries set to undefined are removed from its environment. */
function cli(args: string[], env: Record<string, string | undefined> = {}): Promise<CliRun> {
  const merged: Record<string, string | undefined> = { ...process.env, ...env };
  for (const [k, v] of Object.entries(merged)) if (v === undefined) delete merged[k];
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args, '--json'], { cwd: ROOT, env: merged as NodeJS.ProcessEnv, encoding: 'utf8', timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
      const lines = stdout.split('\n').filter(Boolean);
      expect({ lines: lines.length, stdout, stderr }).toEqual({ lines: 1, stdout, stderr });
      resolve({ code, json: JSON.parse(lines[0]) as Record<string, unknown>, output: stdout + stderr });
    });
  });
}

/** An environment off the local chain that holds no keys at all (docs/architecture.md §10). */
const NO_KEYS = {
  CHAIN_ID: '8453',
  RELAYER_PRIVATE_KEY: undefined,
  TERMS_SIGNER_PRIVATE_KEY: undefined,
  ARBITER_PRIVATE_KEY: undefined,
  SIGNER_ENCRYPTION_KEY: undefined,
  OPERATOR_TOKEN: undefined,
};

/** Operator revocation commands (docs/architecture.md §9) and the keys each CLI command loads. */
describe('CLI key:revoke, oauth:client:revoke, and keys per command', () => {
  let t: TestApp;

  beforeAll(async () => {
    if (!existsSync(CLI)) throw new Error(`${CLI} is missing: build first (this spec runs the compiled CLI)`);
    t = await createTestApp();
  });
  afterAll(() => t?.close());

  const me = (credential: string) => t.http.get('/api/v1/me').set('Authorization', `Bearer ${credential}`);

  it('key:revoke --key ID: the key answers 401 from the next request; revoking again keeps the time; unknown → not_found', async () => {
    const org = await createOrg(t.app);
    expect((await me(org.key)).status).toBe(200);
    // Off the local chain and without any key: revocation needs none, so the CLI boots without them.
    const run = await cli(['key:revoke', '--key', org.keyId], NO_KEYS);
    expect(run.code).toBe(0);
    expect(run.json).toEqual({ id: org.keyId, revokedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) });
    expectError(await me(org.key), 401, 'unauthorized');
    const again = await cli(['key:revoke', '--key', org.keyId]);
    expect(again.json).toEqual(run.json);
    const unknown = await cli(['key:revoke', '--key', randomUUID()]);
    expect(unknown.code).toBe(2);
    expect(unknown.json).toMatchObject({ code: 'not_found' });
    const malformed = await cli(['key:revoke', '--key', 'nope']);
    expect(malformed.code).toBe(2);
    expect(malformed.json).toMatchObject({ code: 'invalid_request' });
  });

  it('oauth:client:revoke --client ID: its live tokens answer 401 at once and it can mint no more', async () => {
    const org = await createOrg(t.app);
    const client = await createOAuthClient(t.app, org.organizationId, ['checkout:read']);
    const mint = () => t.http.post('/oauth/token').send({ grant_type: 'client_credentials', client_id: client.clientId, client_secret: client.clientSecret });
    const tokens = [(await mint()).body.access_token as string, (await mint()).body.access_token as string];
    for (const token of tokens) expect((await me(token)).status).toBe(200);
    const run = await cli(['oauth:client:revoke', '--client', client.clientId], NO_KEYS);
    expect(run.code).toBe(0);
    expect(run.json).toEqual({ clientId: client.clientId, revokedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) });
    for (const token of tokens) expectError(await me(token), 401, 'unauthorized');
    expectError(await mint(), 401, 'unauthorized');
    expect((await me(org.key)).status).toBe(200);
    const unknown = await cli(['oauth:client:revoke', '--client', 'bac_unknown']);
    expect(unknown.code).toBe(2);
    expect(unknown.json).toMatchObject({ code: 'not_found' });
  });

  it('escrow:resolve off the local chain needs ARBITER_PRIVATE_KEY and refuses a published anvil key without printing it', async () => {
    const missing = await cli(['escrow:resolve', randomUUID(), '--to', 'buyer'], NO_KEYS);
    expect(missing.code).toBe(1);
    expect(missing.json.error).toMatch(/ARBITER_PRIVATE_KEY must be set/);
    const known = await cli(['escrow:resolve', randomUUID(), '--to', 'buyer'], { ...NO_KEYS, ARBITER_PRIVATE_KEY: anvilKey('arbiter') });
    expect(known.code).toBe(1);
    expect(known.json.error).toMatch(/ARBITER_PRIVATE_KEY=<hidden>: is a publicly known value/);
    expect(known.output.toLowerCase()).not.toContain(anvilKey('arbiter').slice(2, 20));
    // With a key of its own it boots and gets as far as the escrow lookup.
    const own = await cli(['escrow:resolve', randomUUID(), '--to', 'buyer'], { ...NO_KEYS, ARBITER_PRIVATE_KEY: Wallet.createRandom().privateKey });
    expect(own.code).toBe(2);
    expect(own.json).toMatchObject({ code: 'not_found' });
  });
});
