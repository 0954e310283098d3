import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { formatEther, type Wallet } from 'ethers';
import type { Browser } from 'playwright-core';
import { WebhookEvent } from '../../src/common/outbox/webhook-event';
import { AgentsService } from '../../src/modules/agents/agents.service';
import { signIntentMandate } from '../../src/modules/mandates/mandate-signing';
import { createTestApp, TestApp } from '../support/app';
import { agentOwnerProof, consoleHeaders, consoleSignIn } from '../support/console';
import { createPayee } from '../support/agents';
import { chromiumAvailable, launchChromium, openWalletPage, screenshot, WalletPage } from '../support/browser';
import { consoleReady as ready, seeText } from '../support/console-browser';
import { fundOnChain, TestChain, USDC } from '../support/chain';
import { waitFor } from '../support/wait';
import { emitEvents, IsolatedEnv, isolatedWebhookEnv, startTestWorker, TestWorker } from '../support/webhook-env';
import { WebhookReceiver } from '../support/webhook-receiver';

jest.setTimeout(180_000);

const RUN = chromiumAvailable('the console in a real browser (test/e2e/console-browser.e2e-spec.ts)');
const describeBrowser = RUN ? describe : describe.skip;

/**
 * The console (docs/architecture.md §19) in headless chromium against the real api (listening on a
 * port), the real worker (relayer, outbox relay, webhook delivery), Postgres, Redis and anvil. The
 * wallet injected into the page signs for real with an anvil account (SIWE by personal_sign,
 * EnableSigner by eth_signTypedData_v4; test/support/browser.ts).
 */
describeBrowser('the console in a browser', () => {
  let iso: IsolatedEnv;
  let t: TestApp;
  let worker: TestWorker;
  let chain: TestChain;
  let receiver: WebhookReceiver;
  let browser: Browser;
  let base: string;
  let person: Wallet;
  let wp: WalletPage;

  beforeAll(async () => {
    iso = await isolatedWebhookEnv('console');
    const env = { ...iso.env, CHAIN_POLL_MS: '200' };
    t = await createTestApp(env);
    await t.app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}`;
    worker = await startTestWorker(env);
    chain = new TestChain();
    receiver = await WebhookReceiver.start();
    person = await chain.wallet({ usdc: 1_000n * USDC });
    browser = await launchChromium();
    wp = await openWalletPage(browser, { wallet: person, chainId: 31337 }, { width: 1100, height: 900 });
  });
  afterAll(async () => {
    await wp?.close();
    await browser?.close();
    await worker?.close();
    await t?.close();
    await receiver?.close();
    chain?.close();
    await iso?.drop();
  });

  it('signs in, creates an organisation, a key used against the API, an agent with a policy and its signer enabled, sees its payment, retries a failed webhook, signs out', async () => {
    const { page } = wp;
    // Sign in with Ethereum.
    expect((await page.goto(`${base}/console`))?.status()).toBe(200);
    await ready(page);
    await screenshot(page, 'console-sign-in');
    await page.getByRole('button', { name: 'Connect wallet' }).click();
    await page.getByRole('button', { name: 'Sign in with Ethereum' }).click();
    await seeText(page, 'You own no organisation yet.');
    expect(wp.calls.some(([m]) => m === 'personal_sign')).toBe(true);
    const cookies = await wp.context.cookies(base);
    expect(cookies.find((c) => c.name === 'pcp_console')).toMatchObject({ httpOnly: true, sameSite: 'Strict' });

    // Create an organisation (payout address = the signed-in address).
    const handle = `shop-${randomUUID().slice(0, 8)}`;
    await page.getByLabel('Name').fill('Console Shop');
    await page.getByLabel('Handle').fill(handle);
    await page.getByRole('button', { name: 'Create' }).click();
    await page.waitForURL(/\/console\/orgs\/[0-9a-f-]{36}$/);
    await ready(page);
    const orgId = page.url().split('/').pop()!;
    await seeText(page, person.address);
    // The payout address's balances, read from the chain.
    await page.locator('#payout-usdc').filter({ hasText: /\d/ }).waitFor({ timeout: 30_000 });
    expect(await page.locator('#payout-usdc').textContent()).toBe('1000.00');
    expect(await page.locator('#payout-eth').textContent()).toBe(formatEther(await person.provider!.getBalance(person.address)));
    await screenshot(page, 'console-overview');

    // A merchant key, shown once, used against the API.
    await page.getByRole('link', { name: 'API keys' }).click();
    await ready(page);
    await page.getByLabel('checkout:*').check();
    await page.getByRole('button', { name: 'Create key' }).click();
    const secret = (await page.locator('#secret').textContent({ timeout: 30_000 }))!;
    expect(secret).toMatch(/^bk_live_/);
    const me = await t.http.get('/api/v1/me').set('X-Api-Key', secret);
    expect(me.status).toBe(200);
    expect(me.body.organization).toMatchObject({ id: orgId, handle });
    const checkout = await t.http.post('/api/v1/checkout-sessions').set('X-Api-Key', secret).send({ amount: '7.00', description: 'made with a console key' });
    expect(checkout.status).toBe(200);
    await screenshot(page, 'console-keys');

    // An OAuth client, its secret shown once; a token from it works; revoked from the page, it stops.
    await page.getByRole('link', { name: 'OAuth clients' }).click();
    await ready(page);
    await page.getByLabel('checkout:read').check();
    await page.getByRole('button', { name: 'Create client' }).click();
    const clientSecret = (await page.locator('#secret').textContent({ timeout: 30_000 }))!;
    const clientId = (await page.locator('#oauth-clients tbody tr').first().getAttribute('data-id'))!;
    expect(clientId).toMatch(/^bac_/);
    const grant = () => t.http.post('/oauth/token').send({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret });
    expect((await grant()).status).toBe(200);
    await screenshot(page, 'console-oauth-clients');
    page.once('dialog', (d) => void d.accept());
    await page.locator(`#oauth-clients tr[data-id="${clientId}"] button`).click();
    await seeText(page, 'OAuth client revoked.');
    await page.locator(`#oauth-clients tr[data-id="${clientId}"] .revoked`).waitFor({ state: 'visible' });
    expect((await grant()).status).toBe(401);

    // An agent with a policy; its signer enabled by the owner's EnableSigner signature.
    await page.getByRole('link', { name: 'Agents' }).click();
    await ready(page);
    const slug = `bot-${randomUUID().slice(0, 8)}`;
    await page.getByLabel('Slug').fill(slug);
    await page.getByRole('button', { name: 'Create agent' }).click();
    await page.waitForURL(/\/agents\/[0-9a-f-]{36}$/);
    await ready(page);
    const agentId = page.url().split('/').pop()!;
    await page.getByLabel('dailyLimit').fill('50');
    await page.getByLabel('perTransactionMax').fill('20.00');
    await page.getByRole('button', { name: 'Save policy' }).click();
    await seeText(page, 'Policy saved.');
    expect((await t.app.get(AgentsService).view(agentId)).policy).toMatchObject({ dailyLimit: '50.00', perTransactionMax: '20.00' });
    await page.getByRole('button', { name: 'Connect wallet' }).click();
    await page.getByRole('button', { name: 'Enable the session signer' }).click();
    await seeText(page, 'Session signer enabled.');
    expect(await page.locator('#signer-status').getAttribute('data-enabled')).toBe('true');
    await page.getByRole('button', { name: 'Create agent key' }).click();
    const agentKey = (await page.locator('#secret').textContent({ timeout: 30_000 }))!;
    expect(agentKey).toMatch(/^bk_agent_live_/);

    // Top up the signer from the console: the wallet sends a plain USDC transfer; the page shows the mined balance.
    const signer = (await t.http.get('/api/v1/agent').set('X-Api-Key', agentKey)).body.signer.address as string;
    expect(await chain.usdcBalance(signer)).toBe(0n);
    await page.getByLabel('Top up amount (USDC)').fill('30');
    await page.getByRole('button', { name: 'Top up', exact: true }).click();
    await seeText(page, /Topped up/);
    expect(await page.locator('#signer-balance').textContent()).toBe('30.00');
    expect(await chain.usdcBalance(signer)).toBe(30n * USDC);
    const sent = wp.calls.find(([m]) => m === 'eth_sendTransaction')![1] as Array<{ from: string; to: string }>;
    expect(sent[0].from.toLowerCase()).toBe(person.address.toLowerCase());
    expect(sent[0].to.toLowerCase()).toBe(chain.usdc.address.toLowerCase());
    // Pay through the API; the console shows it.
    const payee = await createPayee(t, chain);
    const payment = await t.http.post('/api/v1/payments').set({ 'X-Api-Key': agentKey, 'Idempotency-Key': randomUUID() }).send({ to: payee.handle, amount: '12.50' });
    expect(payment.status).toBe(200);
    await page.reload();
    await ready(page);
    await page.locator(`#payments tr[data-id="${payment.body.id}"]`).waitFor({ state: 'visible', timeout: 30_000 });
    await seeText(page, '12.50');

    // A mandate created through the API, revoked from the console with the owner's RevokeMandate signature.
    const terms = { payees: [payee.handle], maxAmountPerPayment: '5.00', totalAmount: '20.00', expiresAt: new Date(Date.now() + 86_400_000).toISOString(), description: 'console revoke' };
    const mandate = await t.http.post('/api/v1/mandates').set('X-Api-Key', agentKey).send({ ...terms, credential: await signIntentMandate(person, 31337, slug, terms) });
    expect(mandate.status).toBe(200);
    await page.reload();
    await ready(page);
    await page.getByRole('button', { name: 'Connect wallet' }).click();
    await page.getByLabel('Top up amount (USDC)').waitFor({ state: 'visible', timeout: 30_000 });
    await page.locator(`#mandates tr[data-id="${mandate.body.id}"] .mandate-status`).filter({ hasText: 'active' }).waitFor({ timeout: 30_000 });
    page.once('dialog', (d) => void d.accept());
    await page.locator(`#mandates tr[data-id="${mandate.body.id}"] button.revoke-mandate`).click();
    await seeText(page, 'Mandate revoked.');
    expect(await page.locator(`#mandates tr[data-id="${mandate.body.id}"] .mandate-status`).textContent()).toBe('revoked');
    expect((await t.http.get(`/api/v1/mandates/${mandate.body.id}`).set('X-Api-Key', agentKey)).body).toMatchObject({ status: 'revoked' });

    // Withdraw part of the float: the owner signs Withdraw; the USDC comes back to the owner.
    await waitFor(async () => (await chain.usdcBalance(signer)) === 17_500_000n, { timeoutMs: 60_000, label: 'payment settled from the signer' });
    const ownerBefore = await chain.usdcBalance(person.address);
    await page.getByLabel('Withdraw amount (USDC)').fill('5.00');
    await page.getByRole('button', { name: 'Withdraw', exact: true }).click();
    await seeText(page, /Withdrew 5\.00 USDC to the owner/);
    await waitFor(async () => (await chain.usdcBalance(person.address)) === ownerBefore + 5n * USDC, { timeoutMs: 60_000, label: 'withdrawal mined' });
    expect(await chain.usdcBalance(signer)).toBe(12_500_000n);
    await screenshot(page, 'console-agent');

    // Webhooks: an endpoint that fails, the failed delivery in the log, retried once it answers.
    receiver.respond = () => 500;
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await ready(page);
    await page.getByLabel('URL').fill(receiver.url('/console-hook'));
    await page.getByRole('button', { name: 'Create endpoint' }).click();
    receiver.secrets = [(await page.locator('#secret').textContent({ timeout: 30_000 }))!];
    await emitEvents(t.app, orgId, [{ type: WebhookEvent.CheckoutFunded, object: { object: 'checkout_session', id: checkout.body.id } }]);
    await waitFor(async () => receiver.received.some((d) => d.path === '/console-hook'), { timeoutMs: 60_000, label: 'first attempt' });
    await waitFor(
      async () => {
        await page.reload();
        await ready(page);
        return (await page.locator('#deliveries .delivery-status').first().textContent().catch(() => null)) === 'retrying';
      },
      { timeoutMs: 60_000, intervalMs: 1000, label: 'delivery shown failing' },
    );
    receiver.respond = () => 200;
    await page.locator('#deliveries button.retry').first().click();
    await seeText(page, /Retry queued/);
    await waitFor(
      async () => {
        await page.reload();
        await ready(page);
        return (await page.locator('#deliveries .delivery-status').first().textContent().catch(() => null)) === 'succeeded';
      },
      { timeoutMs: 60_000, intervalMs: 1000, label: 'retried delivery shown succeeded' },
    );
    expect(receiver.received.filter((d) => d.path === '/console-hook').at(-1)!.verifiedWith.length).toBeGreaterThan(0);

    // "Send test event": a signed ping through the delivery path, in the log.
    await page.getByRole('button', { name: 'Send test event' }).click();
    await seeText(page, /Test event queued/);
    await waitFor(async () => receiver.received.some((d) => d.path === '/console-hook' && d.body?.type === 'ping' && d.verifiedWith.length > 0), { timeoutMs: 60_000, label: 'ping received and verified' });
    await waitFor(
      async () => {
        await page.reload();
        await ready(page);
        const row = page.locator('#deliveries tbody tr').filter({ has: page.locator('.delivery-event', { hasText: 'ping' }) });
        return (await row.locator('.delivery-status').textContent().catch(() => null)) === 'succeeded';
      },
      { timeoutMs: 60_000, intervalMs: 1000, label: 'ping delivery shown succeeded' },
    );
    await screenshot(page, 'console-webhooks');

    // A checkout funded on-chain: its detail page shows the escrow's chain events, `funded` with its transaction hash and block.
    const buyer = await chain.wallet({ usdc: 100n * USDC });
    const fundTx = await fundOnChain(t, chain, checkout.body.id, buyer);
    const fundBlock = (await person.provider!.getTransactionReceipt(fundTx))!.blockNumber;
    await waitFor(async () => (await t.http.get(`/api/v1/checkout-sessions/${checkout.body.id}`).set('X-Api-Key', secret)).body.status === 'funded', { timeoutMs: 60_000, label: 'checkout indexed as funded' });
    await page.goto(`${base}/console/orgs/${orgId}/checkouts/${checkout.body.id}`);
    await ready(page);
    const funded = page.locator('#timeline tbody tr').filter({ has: page.locator('.chain-action', { hasText: 'funded' }) });
    await funded.waitFor({ state: 'visible', timeout: 30_000 });
    expect(await funded.locator('.chain-tx').textContent()).toBe(fundTx);
    expect(await funded.locator('.chain-block').textContent()).toBe(String(fundBlock));

    // Seller actions from the console: the payout wallet accepts, then marks delivered (each a contract
    // call it signs and sends, reported to POST /api/v1/escrows/{id}/{action}); the timeline shows each
    // event with its transaction and block, and checkout.accepted reaches the endpoint and the log.
    const sellerTx = async (action: string, button: string, done: string | RegExp) => {
      const before = wp.calls.filter(([m]) => m === 'eth_sendTransaction').length;
      await page.getByRole('button', { name: button, exact: true }).click();
      await seeText(page, done);
      const sends = wp.calls.filter(([m]) => m === 'eth_sendTransaction');
      expect(sends.length).toBe(before + 1);
      const tx = (sends.at(-1)![1] as Array<{ from: string; to: string }>)[0];
      expect(tx.from.toLowerCase()).toBe(person.address.toLowerCase());
      expect(tx.to.toLowerCase()).toBe(chain.gateway.escrowAddress.toLowerCase());
      const row = page.locator('#timeline tbody tr').filter({ has: page.locator('.chain-action', { hasText: action }) });
      await row.waitFor({ state: 'visible', timeout: 30_000 });
      const hash = (await row.locator('.chain-tx').textContent())!;
      const receipt = (await person.provider!.getTransactionReceipt(hash))!;
      expect(receipt.from.toLowerCase()).toBe(person.address.toLowerCase());
      expect(await row.locator('.chain-block').textContent()).toBe(String(receipt.blockNumber));
      return hash;
    };
    await page.getByRole('button', { name: 'Accept', exact: true }).waitFor({ state: 'visible', timeout: 30_000 });
    await page.getByRole('button', { name: 'Connect wallet' }).click();
    await page.locator('#account[data-account]').waitFor({ state: 'attached', timeout: 30_000 });
    expect(await page.getByRole('button', { name: 'Mark delivered' }).count()).toBe(0); // not before accept
    await sellerTx('accepted', 'Accept', 'Escrow accepted.');
    expect(await page.locator('#escrow-status').textContent()).toBe('accepted');
    await sellerTx('delivered', 'Mark delivered', /Marked delivered/);
    expect(await page.locator('#escrow-status').textContent()).toBe('delivered');
    expect(await page.getByRole('button', { name: 'Accept', exact: true }).count()).toBe(0);
    const escrowView = (await t.http.get(`/api/v1/checkout-sessions/${checkout.body.id}`).set('X-Api-Key', secret)).body;
    expect(escrowView.status).toBe('delivered');
    await screenshot(page, 'console-checkout');
    await waitFor(async () => receiver.received.some((d) => d.path === '/console-hook' && d.body?.type === 'checkout.accepted' && d.body.data.object.id === checkout.body.id && d.verifiedWith.length > 0), { timeoutMs: 60_000, label: 'checkout.accepted delivered' });
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await waitFor(
      async () => {
        await page.reload();
        await ready(page);
        const row = page.locator('#deliveries tbody tr').filter({ has: page.locator('.delivery-event', { hasText: 'checkout.accepted' }) });
        return (await row.locator('.delivery-status').textContent().catch(() => null)) === 'succeeded';
      },
      { timeoutMs: 60_000, intervalMs: 1000, label: 'checkout.accepted delivery shown succeeded' },
    );

    // Decline from the escrow page: the buyer is refunded and checkout.refunded is delivered.
    const second = await t.http.post('/api/v1/checkout-sessions').set('X-Api-Key', secret).send({ amount: '3.00', description: 'declined from the console' });
    await fundOnChain(t, chain, second.body.id, buyer);
    let escrowId = '';
    await waitFor(async () => {
      const c = (await t.http.get(`/api/v1/checkout-sessions/${second.body.id}`).set('X-Api-Key', secret)).body;
      escrowId = c.escrowId ?? '';
      return c.status === 'funded';
    }, { timeoutMs: 60_000, label: 'second checkout indexed as funded' });
    const buyerBefore = await chain.usdcBalance(buyer.address);
    await page.goto(`${base}/console/orgs/${orgId}/escrows/${escrowId}`);
    await ready(page);
    await page.getByRole('button', { name: 'Decline and refund' }).waitFor({ state: 'visible', timeout: 30_000 });
    await page.getByRole('button', { name: 'Connect wallet' }).click();
    await page.locator('#account[data-account]').waitFor({ state: 'attached', timeout: 30_000 });
    page.once('dialog', (d) => void d.accept());
    await sellerTx('declined', 'Decline and refund', /Declined/);
    expect(await chain.usdcBalance(buyer.address)).toBe(buyerBefore + 3n * USDC);
    expect((await t.http.get(`/api/v1/checkout-sessions/${second.body.id}`).set('X-Api-Key', secret)).body.status).toBe('refunded');
    await waitFor(async () => receiver.received.some((d) => d.path === '/console-hook' && d.body?.type === 'checkout.refunded' && d.body.data.object.id === second.body.id), { timeoutMs: 60_000, label: 'checkout.refunded delivered' });

    // Sign out: the session is revoked at once.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(`${base}/console`);
    await ready(page);
    await page.getByRole('button', { name: 'Connect wallet' }).waitFor({ state: 'visible' });
    expect((await page.goto(`${base}/console/orgs/${orgId}`))?.url()).toBe(`${base}/console`);
    // The one expected resource error: GET /webhook-endpoints answers 404 before an endpoint exists.
    expect(wp.errors.filter((e) => !/status of 404/.test(e))).toEqual([]);
  });

  it("an agent's owner who does not own the organisation manages that agent from the console (policy, pause, signer) and sees nothing else", async () => {
    // An organisation of someone else, with an agent whose owner address is this wallet.
    const orgOwner = await chain.wallet();
    const login = await consoleSignIn(t, orgOwner);
    const orgId = (await t.http.post('/console/api/organizations').set(consoleHeaders(login)).send({ name: 'Someone Else Co', handle: `else-${randomUUID().slice(0, 8)}` }).expect(200)).body.id as string;
    const agentOwner = await chain.wallet();
    const slug = `owned-${randomUUID().slice(0, 8)}`;
    const ownerProof = await agentOwnerProof(agentOwner, { organizationId: orgId, slug, ownerAddress: agentOwner.address });
    const agentId = (await t.http.post('/api/v1/agents').set(consoleHeaders(login, orgId)).send({ slug, ownerAddress: agentOwner.address, ownerProof }).expect(200)).body.id as string;
    const aw = await openWalletPage(browser, { wallet: agentOwner, chainId: 31337 }, { width: 1100, height: 900 });
    try {
      const { page } = aw;
      await page.goto(`${base}/console`);
      await ready(page);
      await page.getByRole('button', { name: 'Connect wallet' }).click();
      await page.getByRole('button', { name: 'Sign in with Ethereum' }).click();
      await seeText(page, 'Agents you own');
      await page.getByRole('link', { name: slug }).click();
      await page.waitForURL(`${base}/console/agents/${agentId}`);
      await ready(page);
      expect(await page.getByRole('link', { name: 'API keys' }).count()).toBe(0);
      await page.getByLabel('dailyLimit').fill('15');
      await page.getByRole('button', { name: 'Save policy' }).click();
      await seeText(page, 'Policy saved.');
      await page.getByRole('button', { name: 'Pause' }).click();
      await page.locator('#paused', { hasText: 'paused' }).waitFor({ timeout: 30_000 });
      await page.getByRole('button', { name: 'Connect wallet' }).click();
      await page.getByRole('button', { name: 'Enable the session signer' }).click();
      await seeText(page, 'Session signer enabled.');
      expect((await t.app.get(AgentsService).view(agentId))).toMatchObject({ paused: true, policy: { dailyLimit: '15.00' }, signer: { enabled: true } });
      await screenshot(page, 'console-agent-owner');
      expect(aw.errors).toEqual([]);
      // Not the organisation's pages.
      expect((await page.goto(`${base}/console/orgs/${orgId}`))?.status()).toBe(404);
    } finally {
      await aw.close();
    }
  });
  it("an organisation owner's raise of another owner's agent asks the agent owner's wallet: O's wallet is refused, V consents, the raise applies", async () => {
    const O = await chain.wallet();
    const V = await chain.wallet();
    const o = await consoleSignIn(t, O);
    const v = await consoleSignIn(t, V);
    const orgId = (await t.http.post('/console/api/organizations').set(consoleHeaders(o)).send({ name: 'O Co', handle: `oco-${randomUUID().slice(0, 8)}` }).expect(200)).body.id as string;
    const slug = `vbot-${randomUUID().slice(0, 8)}`;
    const ownerProof = await agentOwnerProof(V, { organizationId: orgId, slug, ownerAddress: V.address });
    const agentId = (await t.http.post('/api/v1/agents').set(consoleHeaders(o, orgId)).send({ slug, ownerAddress: V.address, ownerProof }).expect(200)).body.id as string;
    await t.http.put(`/api/v1/agents/${agentId}/policy`).set({ Cookie: v.cookie, 'X-CSRF-Token': v.csrf, 'X-Console-Agent': agentId }).send({ perTransactionMax: '1.00', dailyLimit: '3.00' }).expect(200);
    const ow = await openWalletPage(browser, { wallet: O, chainId: 31337 }, { width: 1100, height: 900 });
    try {
      const { page } = ow;
      await page.goto(`${base}/console`);
      await ready(page);
      await page.getByRole('button', { name: 'Connect wallet' }).click();
      await page.getByRole('button', { name: 'Sign in with Ethereum' }).click();
      await waitFor(async () => (await ow.context.cookies(base)).some((c) => c.name === 'pcp_console'), { label: 'the console session cookie' });
      // The sign-in reloads /console itself: wait for the signed-in page before navigating, or the two navigations race.
      await page.locator('#sign-out').waitFor({ state: 'attached', timeout: 30_000 });
      await page.goto(`${base}/console/orgs/${orgId}/agents/${agentId}`);
      await ready(page);
      await page.getByRole('button', { name: 'Connect wallet' }).click();
      await page.locator(`#account[data-account="${O.address}"]`).waitFor({ state: 'attached', timeout: 30_000 });
      await page.getByLabel('dailyLimit').fill('1000.00');
      await page.getByLabel('perTransactionMax').fill('1000.00');
      // O's wallet holds no V account: it refuses to sign for V, and nothing changes.
      await page.getByRole('button', { name: 'Save policy' }).click();
      await seeText(page, /did not consent/);
      const asked = ow.calls.filter(([m]) => m === 'eth_signTypedData_v4').map(([, p]) => (p as string[])[0].toLowerCase());
      expect(asked).toEqual([V.address.toLowerCase()]);
      expect((await t.app.get(AgentsService).view(agentId)).policy).toMatchObject({ perTransactionMax: '1.00', dailyLimit: '3.00' });
      // V's wallet consents (the same page, the agent owner's wallet now answering): the raise applies.
      ow.behaviour.wallet = V;
      await page.getByRole('button', { name: 'Save policy' }).click();
      await seeText(page, 'Policy saved.');
      expect((await t.app.get(AgentsService).view(agentId)).policy).toMatchObject({ perTransactionMax: '1000.00', dailyLimit: '1000.00' });
      expect(ow.errors.filter((e) => !/status of 403/.test(e))).toEqual([]);
    } finally {
      await ow.close();
    }
  });
});
