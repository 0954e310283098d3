import { createTestApp, TestApp } from '../support/app';
import { createOrg, TestOrg } from '../support/factories';

describe('hosted pay page (GET /checkout/{id})', () => {
  let t: TestApp;
  let org: TestOrg;
  beforeAll(async () => {
    t = await createTestApp();
    org = await createOrg(t.app, { payoutAddress: '0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc' });
  });
  afterAll(() => t.close());

  const create = async (body: Record<string, unknown>) =>
    (await t.http.post('/api/v1/checkout-sessions').set('X-Api-Key', org.key).send({ amount: '25', description: 'Blue mug', ...body }).expect(200)).body as {
      id: string;
      payUrl: string;
    };

  it('serves the page at the path of payUrl with the order, the status and the signed funding terms', async () => {
    const s = await create({});
    expect(new URL(s.payUrl).pathname).toBe(`/checkout/${s.id}`);
    const res = await t.http.get(`/checkout/${s.id}`).expect(200);
    expect(res.headers['content-type']).toMatch(/text\/html/);
    expect(res.headers['content-security-policy']).toContain("default-src 'none'");
    expect(res.text).toContain('Blue mug');
    expect(res.text).toContain('25.00 USDC');
    expect(res.text).toContain('data-status="open"');
    expect(res.text).toContain('Pay 25.00 USDC into escrow');
    expect(res.text).toContain(process.env.ESCROW_ADDRESS!);
    expect(res.text).toContain('25000000');
    expect(res.text).toContain('http-equiv="refresh"');
  });

  it('escapes merchant-supplied text', async () => {
    const s = await create({ description: '<script>alert(1)</script>' });
    const res = await t.http.get(`/checkout/${s.id}`).expect(200);
    expect(res.text).not.toContain('<script>alert(1)</script>');
    expect(res.text).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
  });

  it('shows a funded session as paid into escrow, without terms, with the way back to the merchant', async () => {
    const s = await create({ redirectUrl: 'https://shop.example.com/thanks?o=1&x=2' });
    await t.dataSource.query(`UPDATE checkout_sessions SET status = 'funded' WHERE id = $1`, [s.id]);
    const res = await t.http.get(`/checkout/${s.id}`).expect(200);
    expect(res.text).toContain('data-status="funded"');
    expect(res.text).toContain('Paid into escrow');
    expect(res.text).not.toContain('into escrow</h2>');
    expect(res.text).not.toContain('http-equiv="refresh"');
    expect(res.text).toContain('href="https://shop.example.com/thanks?o=1&amp;x=2"');
  });

  it('says an expired or cancelled session is closed, with no funding terms and no refresh', async () => {
    for (const [status, words] of [
      ['expired', 'This checkout has expired. Nothing can be paid here'],
      ['cancelled', 'This checkout was cancelled and the payment returned. Nothing can be paid here.'],
    ] as const) {
      const s = await create({});
      await t.dataSource.query(`UPDATE checkout_sessions SET status = $2 WHERE id = $1`, [s.id, status]);
      const res = await t.http.get(`/checkout/${s.id}`).expect(200);
      expect(res.text).toContain(`data-status="${status}"`);
      expect(res.text).toContain(words);
      expect(res.text).not.toContain('into escrow</h2>');
      expect(res.text).not.toContain('http-equiv="refresh"');
    }
  });

  it('loads only the bundled script, by content hash, under a CSP without inline script', async () => {
    const s = await create({});
    const res = await t.http.get(`/checkout/${s.id}`).expect(200);
    const csp = res.headers['content-security-policy'] as string;
    expect(/script-src ([^;]*)/.exec(csp)?.[1]).toBe("'self'");
    expect(/connect-src ([^;]*)/.exec(csp)?.[1]).toBe("'self'");
    expect(res.text.match(/<script[^>]*>/g)).toEqual([expect.stringMatching(/^<script defer src="\/assets\/pay\.js\?v=[0-9a-f]{16}">$/)]);
    expect(res.text).toContain(`data-checkout-id="${s.id}"`);
  });

  it('serves the agent owner page and answers 404 for an unknown agent', async () => {
    await t.http.get('/agents/00000000-0000-7000-8000-000000000000/signer').expect(404);
    await t.http.get('/agents/nope/signer').expect(404);
  });

  it('answers 404 for an unknown or malformed id', async () => {
    await t.http.get('/checkout/00000000-0000-7000-8000-000000000000').expect(404);
    await t.http.get('/checkout/not-an-id').expect(404);
  });
});
