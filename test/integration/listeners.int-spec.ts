import { createTestApp, TestApp } from '../support/app';
import { createOrg, TestOrg } from '../support/factories';
import { freePort, startCompiled, Started, stopProcess } from '../support/processes';
import { waitFor } from '../support/wait';

jest.setTimeout(120_000);

/**
 * The api's listeners as configured (docs/architecture.md §1, §17): the checkout host on
 * CHECKOUT_PORT, MCP on MCP_PORT, and the OAuth authorization server metadata where RFC 8414 §3
 * puts it for the issuer the protected-resource metadata names.
 */
describe('api listeners (compiled api process)', () => {
  let t: TestApp;
  let org: TestOrg;
  let api: Started;
  let port: number;
  let checkoutPort: number;
  let mcpPort: number;
  const issuer = () => `http://127.0.0.1:${port}/edge`;

  beforeAll(async () => {
    t = await createTestApp();
    org = await createOrg(t.app);
    [port, checkoutPort, mcpPort] = [await freePort(), await freePort(), await freePort()];
    api = startCompiled('main.js', {
      PORT: String(port),
      CHECKOUT_PORT: String(checkoutPort),
      MCP_PORT: String(mcpPort),
      API_BASE_URL: issuer(),
      CHECKOUT_BASE_URL: `http://127.0.0.1:${checkoutPort}`,
      MCP_BASE_URL: `http://127.0.0.1:${mcpPort}`,
    });
    await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/health/live`).catch(() => null))?.status === 200, { label: 'api /health/live', describe: api.output });
  });
  afterAll(async () => {
    await stopProcess(api);
    await t.close();
  });

  it('serves the pay page at the payUrl on CHECKOUT_PORT, and only the checkout host routes there', async () => {
    const created = await fetch(`http://127.0.0.1:${port}/api/v1/checkout-sessions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': org.key },
      body: JSON.stringify({ amount: '5.00', description: 'listener test' }),
    });
    expect(created.status).toBe(200);
    const session = (await created.json()) as { id: string; payUrl: string };
    expect(session.payUrl).toBe(`http://127.0.0.1:${checkoutPort}/checkout/${session.id}`);

    const page = await fetch(session.payUrl);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    expect(await page.text()).toContain(session.id);
    const state = await fetch(`http://127.0.0.1:${checkoutPort}/checkout/${session.id}/state`);
    expect(state.status).toBe(200);
    expect(((await state.json()) as { id: string }).id).toBe(session.id);
    expect((await fetch(`http://127.0.0.1:${checkoutPort}/assets/pay.js`)).status).toBe(200);

    const api = await fetch(`http://127.0.0.1:${checkoutPort}/api/v1/checkout-sessions`, { headers: { 'x-api-key': org.key } });
    expect(api.status).toBe(404);
    expect(await api.json()).toEqual({ error: expect.any(String), code: 'not_found', requestId: expect.any(String) });
  });

  it('serves RFC 8414 metadata for the issuer the protected-resource metadata names, on the api listener; the MCP listener keeps its copy', async () => {
    const resource = (await (await fetch(`http://127.0.0.1:${mcpPort}/.well-known/oauth-protected-resource/mcp`)).json()) as { authorization_servers: string[] };
    expect(resource.authorization_servers).toEqual([issuer()]);
    const wellKnown = new URL(issuer());
    const metadataUrl = `${wellKnown.origin}/.well-known/oauth-authorization-server${wellKnown.pathname}`;
    const res = await fetch(metadataUrl);
    expect(res.status).toBe(200);
    const metadata = (await res.json()) as Record<string, unknown>;
    expect(metadata).toMatchObject({ issuer: issuer(), token_endpoint: `${issuer()}/oauth/token`, grant_types_supported: ['client_credentials'] });
    const copy = await fetch(`http://127.0.0.1:${mcpPort}/.well-known/oauth-authorization-server`);
    expect(await copy.json()).toEqual(metadata);
  });
});
