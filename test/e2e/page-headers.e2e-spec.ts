import { randomUUID } from 'node:crypto';
import { Wallet } from 'ethers';
import { createTestApp, TestApp } from '../support/app';
import { consoleHeaders, consoleSignIn } from '../support/console';
import { createOrg, TestOrg } from '../support/factories';

/** A CSP header as directive → its sources, so the serialisation (`;` or `; `) does not matter. */
function directives(header: string | undefined): Record<string, string> {
  expect(header).toBeDefined();
  return Object.fromEntries(
    header!
      .split(';')
      .map((d) => d.trim().split(/\s+/))
      .filter((d) => d[0])
      .map(([name, ...sources]) => [name, sources.join(' ')]),
  );
}

const HOSTED_PAGE_CSP = {
  'default-src': "'none'",
  'script-src': "'self'",
  'style-src': "'unsafe-inline'",
  'connect-src': "'self'",
  'img-src': "'self'",
  'form-action': "'self'",
  'base-uri': "'none'",
  'frame-ancestors': "'none'",
};

/**
 * The pages' security headers, set by `helmet` (docs/architecture.md §16, §19): every hosted page
 * (also its 404) and every console page answers with its strict Content-Security-Policy; the
 * console adds `Referrer-Policy: same-origin` and `X-Content-Type-Options: nosniff`.
 */
describe('page security headers (helmet)', () => {
  let t: TestApp;
  let org: TestOrg;
  beforeAll(async () => {
    t = await createTestApp();
    org = await createOrg(t.app, { payoutAddress: '0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc' });
  });
  afterAll(() => t.close());

  it('each hosted page, found or not, has the strict CSP and no-store', async () => {
    const s = (await t.http.post('/api/v1/checkout-sessions').set('X-Api-Key', org.key).send({ amount: '1', description: 'Mug' }).expect(200)).body as { id: string };
    const unknown = randomUUID();
    for (const [path, status] of [
      [`/checkout/${s.id}`, 200],
      [`/checkout/${unknown}`, 404],
      [`/invoices/${unknown}`, 404],
      [`/verify/${unknown}`, 404],
      [`/agents/${unknown}/signer`, 404],
    ] as const) {
      const res = await t.http.get(path);
      expect({ path, status: res.status }).toEqual({ path, status });
      expect({ path, csp: directives(res.headers['content-security-policy']) }).toEqual({ path, csp: HOSTED_PAGE_CSP });
      expect(res.headers['cache-control']).toBe('no-store');
    }
  });

  it('each console page has the console CSP (data: images), same-origin referrers, nosniff and no-store', async () => {
    const login = await consoleSignIn(t, Wallet.createRandom());
    const orgId = (await t.http.post('/console/api/organizations').set(consoleHeaders(login)).send({ name: 'Headers Co', handle: `hdr-${randomUUID().slice(0, 8)}` }).expect(200)).body.id as string;
    for (const [path, cookie] of [
      ['/console', undefined],
      ['/console', login.cookie],
      [`/console/orgs/${orgId}`, login.cookie],
      [`/console/orgs/${orgId}/keys`, login.cookie],
    ] as const) {
      const req = t.http.get(path);
      const res = await (cookie ? req.set('Cookie', cookie) : req);
      expect({ path, status: res.status }).toEqual({ path, status: 200 });
      expect({ path, csp: directives(res.headers['content-security-policy']) }).toEqual({ path, csp: { ...HOSTED_PAGE_CSP, 'img-src': "'self' data:" } });
      expect(res.headers['referrer-policy']).toBe('same-origin');
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['cache-control']).toBe('no-store');
    }
  });
});
