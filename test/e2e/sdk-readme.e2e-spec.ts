import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createTestApp, TestApp } from '../support/app';
import { createOrg } from '../support/factories';

jest.setTimeout(120_000);

const ROOT = join(__dirname, '..', '..');

/**
 * The SDK runs as README.md shows it (issue 28 item 6): a plain Node script in the repository,
 * `import { Pcp } from '@pcp/sdk'`, no build step of its own, against a running api.
 */
describe('the SDK from a plain node script, as the README shows it', () => {
  let t: TestApp;
  let base: string;

  beforeAll(async () => {
    t = await createTestApp({ REDIS_PREFIX: `${process.env.REDIS_PREFIX}-${randomUUID().slice(0, 8)}` });
    await t.app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}`;
  });
  afterAll(() => t.close());

  it("creates a checkout session with the README's snippet and reads it back", async () => {
    const org = await createOrg(t.app);
    const dir = join(ROOT, '.local', `sdk-readme-${process.pid}-${randomUUID().slice(0, 8)}`);
    mkdirSync(dir, { recursive: true });
    const script = join(dir, 'readme.mjs');
    // README.md "Accept a payment", verbatim but for the base URL and the order id.
    writeFileSync(
      script,
      `import { Pcp } from '@pcp/sdk';
const pcp = new Pcp({ baseUrl: process.env.API, credentials: { apiKey: process.env.KEY } });
const session = await pcp.POST('/api/v1/checkout-sessions', {
  params: { header: { 'Idempotency-Key': process.env.ORDER } },
  body: { amount: '25.00', description: 'Blue mug', orderId: '1001', escrowTemplateId: 'physical' },
});
const again = await pcp.GET('/api/v1/checkout-sessions/{id}', { params: { path: { id: session.id } } });
const me = await pcp.GET('/api/v1/me');
console.log(JSON.stringify({ id: session.id, status: again.status, amount: again.amount, org: me.organization.id }));
`,
    );
    try {
      const { stdout } = await promisify(execFile)(process.execPath, [script], { cwd: ROOT, env: { ...process.env, API: base, KEY: org.key, ORDER: `order-${randomUUID()}` }, timeout: 60_000 });
      const out = JSON.parse(stdout.trim().split('\n').pop()!) as { id: string; status: string; amount: string; org: string };
      expect(out).toMatchObject({ status: 'open', amount: '25.00', org: org.organizationId });
      const [{ n }] = (await t.dataSource.query('SELECT count(*)::int AS n FROM checkout_sessions WHERE id = $1 AND organization_id = $2', [out.id, org.organizationId])) as Array<{ n: number }>;
      expect(n).toBe(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
