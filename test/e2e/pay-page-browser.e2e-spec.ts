import type { AddressInfo } from 'node:net';
import type { Wallet } from 'ethers';
import type { Browser, Page } from 'playwright-core';
import { escrowKeyFromId } from '@lib/chain';
import { createTestApp, TestApp } from '../support/app';
import { createAgent } from '../support/agents';
import { chromiumAvailable, horizontalOverflow, launchChromium, openWalletPage, screenshot, WalletPage } from '../support/browser';
import { createCheckout, getCheckout, TestChain, USDC } from '../support/chain';
import { createOrg, TestOrg } from '../support/factories';
import { waitFor } from '../support/wait';
import { IsolatedEnv, isolatedWebhookEnv, startTestWorker, TestWorker } from '../support/webhook-env';
import { WebhookReceiver } from '../support/webhook-receiver';

jest.setTimeout(120_000);

const RUN = chromiumAvailable('hosted pages in a real browser (test/e2e/pay-page-browser.e2e-spec.ts)');
const describeBrowser = RUN ? describe : describe.skip;

/** Waits on page text, never on time: the element matching `text` becomes visible. */
const seeText = (page: Page, text: string | RegExp, timeout = 60_000) => page.getByText(text).first().waitFor({ state: 'visible', timeout });

/**
 * The hosted pages in headless chromium (docs/architecture.md §16) against the real api (listening
 * on a port), the real worker (relayer queue, escrow indexer, outbox relay, webhook delivery),
 * Postgres, Redis and anvil. The wallet is an EIP-1193 provider injected into the page that
 * announces itself by EIP-6963 and signs in Node with an anvil account (test/support/browser.ts).
 */
describeBrowser('hosted pages in a browser (pay, actions, refusals, invoice, verify, agent signer)', () => {
  let iso: IsolatedEnv;
  let t: TestApp;
  let worker: TestWorker;
  let chain: TestChain;
  let receiver: WebhookReceiver;
  let browser: Browser;
  let base: string;
  let seller: Wallet;
  let merchant: TestOrg;
  const open: WalletPage[] = [];

  beforeAll(async () => {
    iso = await isolatedWebhookEnv('browser');
    const env = { ...iso.env, CHAIN_POLL_MS: '200' };
    t = await createTestApp(env);
    await t.app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}`;
    worker = await startTestWorker(env);
    chain = new TestChain();
    receiver = await WebhookReceiver.start();
    seller = await chain.wallet();
    merchant = await createOrg(t.app, { payoutAddress: seller.address });
    const endpoint = await t.http.put('/api/v1/webhook-endpoints').set('X-Api-Key', merchant.key).send({ url: receiver.url('/hook') });
    expect(endpoint.status).toBe(200);
    receiver.secrets = [endpoint.body.secret as string];
    browser = await launchChromium();
  });
  afterEach(async () => {
    for (const p of open.splice(0)) await p.close();
  });
  afterAll(async () => {
    await browser?.close();
    await worker?.close();
    await t?.close();
    await receiver?.close();
    chain?.close();
    await iso?.drop();
  });

  async function walletPage(wallet: Wallet, opts: { chainId?: number; refuseSwitch?: boolean; rejectSignatures?: boolean } = {}): Promise<WalletPage> {
    const wp = await openWalletPage(browser, { wallet, chainId: opts.chainId ?? 31337, refuseSwitch: opts.refuseSwitch, rejectSignatures: opts.rejectSignatures });
    open.push(wp);
    return wp;
  }

  /** Opens the pay page and waits until its script loaded /state (the wallet panel shows or the status is final). */
  async function gotoCheckout(wp: WalletPage, id: string): Promise<void> {
    const res = await wp.page.goto(`${base}/checkout/${id}`);
    expect(res?.status()).toBe(200);
    await wp.page.locator('main[data-ready="true"]').waitFor({ state: 'attached', timeout: 30_000 });
  }

  async function connect(wp: WalletPage): Promise<void> {
    await wp.page.getByRole('button', { name: 'Connect wallet' }).click();
    await seeText(wp.page, /Connected: Test Wallet/);
  }

  const statusOf = (wp: WalletPage) => wp.page.locator('#status').getAttribute('data-status');
  const deliveriesFor = (checkoutId: string) => receiver.received.filter((d) => d.body?.data.object.id === checkoutId && d.verifiedWith.length > 0).map((d) => d.body!.type);
  const sellerAction = async (action: 'accept' | 'markDelivered', escrowId: string, checkoutId: string) => {
    const txHash = await chain.act(seller, action, escrowKeyFromId(checkoutId));
    const res = await t.http.post(`/api/v1/escrows/${escrowId}/${action === 'accept' ? 'accept' : 'mark-delivered'}`).set('X-Api-Key', merchant.key).send({ txHash });
    expect(res.status).toBe(200);
  };

  it('pays a checkout from the page (gasless), shows it funded, returns to the merchant; after accept and delivery the buyer releases from the page; webhooks arrive', async () => {
    const buyer = await chain.wallet({ usdc: 100n * USDC, eth: false });
    const checkout = await createCheckout(t, merchant, { amount: '25.5', description: 'Blue ceramic mug', redirectUrl: `${base}/health/live?order=1001` });
    const escrowAddress = chain.gateway.escrowAddress;
    const [buyer0, seller0, escrow0] = await chain.balances(buyer.address, seller.address, escrowAddress);

    const wp = await walletPage(buyer);
    await gotoCheckout(wp, checkout.id);
    const { page } = wp;
    await seeText(page, 'Blue ceramic mug');
    await seeText(page, '25.50 USDC');
    await seeText(page, 'Awaiting payment');
    await seeText(page, / left$/); // the expiry countdown
    expect(await horizontalOverflow(page)).toBeLessThanOrEqual(0);
    await screenshot(page, 'checkout-open');

    await connect(wp);
    const pay = page.getByRole('button', { name: 'Pay 25.50 USDC' });
    await expect(pay.isVisible()).resolves.toBe(true);
    // keyboard: the pay button takes focus after connecting and Enter pays
    await pay.focus();
    await page.keyboard.press('Enter');
    await seeText(page, 'Paid into escrow');
    await seeText(page, /Payment received: 25\.50 USDC is held in escrow/);
    await screenshot(page, 'checkout-funded');
    await page.waitForURL(`${base}/health/live?order=1001`, { timeout: 30_000 });

    expect(await chain.balances(buyer.address, escrowAddress)).toEqual([buyer0 - 25_500_000n, escrow0 + 25_500_000n]);
    expect(await chain.provider.getBalance(buyer.address)).toBe(0n); // gasless: the buyer has no ETH at all
    const signed = wp.calls.filter(([m]) => m === 'eth_signTypedData_v4');
    expect(signed).toHaveLength(1);
    expect(JSON.parse((signed[0][1] as string[])[1])).toMatchObject({ primaryType: 'ReceiveWithAuthorization', message: { from: buyer.address.toLowerCase(), value: '25500000' } });

    const funded = await waitFor(async () => {
      const c = await getCheckout(t, merchant, checkout.id);
      return c.status === 'funded' && c;
    }, { label: 'checkout funded' });
    const escrowId = (funded as Record<string, unknown>).escrowId as string;
    await sellerAction('accept', escrowId, checkout.id);
    await sellerAction('markDelivered', escrowId, checkout.id);

    await gotoCheckout(wp, checkout.id);
    await seeText(page, 'Delivered, in inspection');
    await connect(wp);
    await page.getByRole('button', { name: 'Release payment to the seller' }).click();
    await seeText(page, /Release 25\.50 USDC to Test Org\?/);
    await screenshot(page, 'checkout-delivered-release');
    await page.getByRole('button', { name: 'Yes, release' }).click();
    await seeText(page, 'Completed: funds released to the seller');
    await seeText(page, 'Payment released to the seller. Thank you!');
    await screenshot(page, 'checkout-released');

    expect(await chain.balances(buyer.address, seller.address, escrowAddress)).toEqual([buyer0 - 25_500_000n, seller0 + 25_500_000n, escrow0]);
    expect(JSON.parse((wp.calls.filter(([m]) => m === 'eth_signTypedData_v4').at(-1)![1] as string[])[1])).toMatchObject({ primaryType: 'EscrowAction' });
    await waitFor(() => {
      const types = deliveriesFor(checkout.id);
      return types.includes('checkout.funded') && types.includes('checkout.released');
    }, { label: 'checkout.funded and checkout.released at the merchant', describe: () => deliveriesFor(checkout.id) });
    expect(wp.errors).toEqual([]);
  });

  it('switches a wallet on another chain when it agrees, pays, then cancels while only funded: the buyer is refunded and the checkout reopens', async () => {
    const buyer = await chain.wallet({ usdc: 10n * USDC, eth: false });
    const checkout = await createCheckout(t, merchant, { amount: '3', description: 'Tea towel' });
    const wp = await walletPage(buyer, { chainId: 8453 });
    await gotoCheckout(wp, checkout.id);
    await connect(wp);
    // The wallet's calls reach the test through a page binding, after the page has drawn "Connected" (read once, it raced in a CI run).
    const switched = await waitFor(() => wp.calls.find(([m]) => m === 'wallet_switchEthereumChain') ?? null, { label: 'the page asks the wallet to switch to 31337', describe: () => wp.calls.map(([m]) => m) });
    expect(switched[1]).toEqual([{ chainId: '0x7a69' }]);
    await waitFor(() => (wp.behaviour.chainId === 31337 ? true : null), { label: 'the wallet on 31337', describe: () => wp.behaviour.chainId });
    expect(wp.behaviour.chainId).toBe(31337);
    await wp.page.getByRole('button', { name: 'Pay 3.00 USDC' }).click();
    await seeText(wp.page, 'Paid into escrow');
    expect(await chain.usdcBalance(buyer.address)).toBe(7n * USDC);
    await wp.page.getByRole('button', { name: 'Cancel and get a refund' }).click();
    await wp.page.getByRole('button', { name: 'Yes, cancel' }).click();
    // A buyer's cancel reopens the checkout under a new escrow id: refunded, and payable again.
    await seeText(wp.page, 'Cancelled and refunded to your wallet. This checkout can still be paid until it expires.');
    expect(await chain.usdcBalance(buyer.address)).toBe(10n * USDC);
    await wp.page.getByRole('button', { name: 'Pay 3.00 USDC' }).waitFor();
    expect(await statusOf(wp)).toBe('open');
    expect(wp.errors).toEqual([]);
  });

  describe('refusals move no money', () => {
    async function openCheckout(buyer: Wallet, opts: Parameters<typeof walletPage>[1] = {}) {
      const checkout = await createCheckout(t, merchant, { amount: '12.5', description: 'Linen apron' });
      const wp = await walletPage(buyer, opts);
      await gotoCheckout(wp, checkout.id);
      return { checkout, wp };
    }
    const unchanged = async (checkoutId: string, buyer: Wallet, before: bigint[]) => {
      expect(await chain.balances(buyer.address, seller.address, chain.gateway.escrowAddress)).toEqual(before);
      expect((await getCheckout(t, merchant, checkoutId)).status).toBe('open');
    };

    it('the wallet rejects the signature (EIP-1193 4001)', async () => {
      const buyer = await chain.wallet({ usdc: 50n * USDC, eth: false });
      const before = await chain.balances(buyer.address, seller.address, chain.gateway.escrowAddress);
      const { checkout, wp } = await openCheckout(buyer, { rejectSignatures: true });
      await connect(wp);
      await wp.page.getByRole('button', { name: 'Pay 12.50 USDC' }).click();
      await seeText(wp.page, 'You rejected the signature in your wallet. Nothing was paid or changed.');
      await screenshot(wp.page, 'checkout-error-rejected');
      expect(await statusOf(wp)).toBe('open');
      expect(wp.calls.map(([m]) => m)).toContain('eth_signTypedData_v4');
      await unchanged(checkout.id, buyer, before);
    });

    it('the wallet is on another chain and refuses to switch', async () => {
      const buyer = await chain.wallet({ usdc: 50n * USDC, eth: false });
      const before = await chain.balances(buyer.address, seller.address, chain.gateway.escrowAddress);
      const { checkout, wp } = await openCheckout(buyer, { chainId: 1, refuseSwitch: true });
      await connect(wp);
      await seeText(wp.page, /wrong network: Ethereum \(chain 1\)\. Switch it to the local development chain \(chain 31337\)/);
      await wp.page.getByRole('button', { name: 'Pay 12.50 USDC' }).click();
      await seeText(wp.page, /wrong network/);
      await screenshot(wp.page, 'checkout-error-network');
      const methods = wp.calls.map(([m]) => m);
      expect(methods).toContain('wallet_switchEthereumChain');
      expect(methods).not.toContain('eth_signTypedData_v4');
      await unchanged(checkout.id, buyer, before);
    });

    it('the wallet holds no USDC', async () => {
      const buyer = await chain.wallet({ eth: false });
      const before = await chain.balances(buyer.address, seller.address, chain.gateway.escrowAddress);
      const { checkout, wp } = await openCheckout(buyer);
      await connect(wp);
      await wp.page.getByRole('button', { name: 'Pay 12.50 USDC' }).click();
      await seeText(wp.page, /Your wallet does not hold enough USDC to pay 12\.50 USDC/);
      await screenshot(wp.page, 'checkout-error-balance');
      await unchanged(checkout.id, buyer, before);
    });

    it('an expired session says so and offers nothing to pay, also when it expires while the page is open', async () => {
      const buyer = await chain.wallet({ usdc: 50n * USDC, eth: false });
      const before = await chain.balances(buyer.address, seller.address, chain.gateway.escrowAddress);
      const expired = await createCheckout(t, merchant, { amount: '9', description: 'Expired order' });
      await t.dataSource.query(`UPDATE checkout_sessions SET expires_at = now() - interval '1 minute' WHERE id = $1`, [expired.id]);
      const wp = await walletPage(buyer);
      await gotoCheckout(wp, expired.id);
      await seeText(wp.page, 'This checkout has expired. Nothing can be paid here');
      await seeText(wp.page, 'Expired');
      expect(await wp.page.getByRole('button').count()).toBe(0);
      await screenshot(wp.page, 'checkout-expired');

      // open on load, expired a moment later: the page notices without a reload and takes the pay button away
      const { checkout, wp: live } = await openCheckout(buyer);
      await connect(live);
      await expect(live.page.getByRole('button', { name: 'Pay 12.50 USDC' }).isVisible()).resolves.toBe(true);
      await t.dataSource.query(`UPDATE checkout_sessions SET expires_at = now() - interval '1 second' WHERE id = $1`, [checkout.id]);
      await live.page.locator('#status[data-status="expired"]').waitFor({ timeout: 30_000 });
      await live.page.getByRole('button', { name: /^Pay / }).waitFor({ state: 'detached', timeout: 30_000 });
      expect(live.calls.map(([m]) => m)).not.toContain('eth_signTypedData_v4');
      expect(await chain.balances(buyer.address, seller.address, chain.gateway.escrowAddress)).toEqual(before);
    });
  });

  it('the invoice page links to its pay page (shell, strict CSP, no script errors)', async () => {
    const created = await t.http
      .post('/api/v1/invoices')
      .set('X-Api-Key', merchant.key)
      .send({ customer: { name: 'Ada Lovelace', email: 'ada@example.com' }, lineItems: [{ description: 'Logo design', quantity: 2, unitAmount: '250.00' }, { description: 'Rush fee', unitAmount: '49.99' }], memo: 'Thank you!' });
    expect(created.status).toBe(200);
    expect((await t.http.post(`/api/v1/invoices/${created.body.id}/send`).set('X-Api-Key', merchant.key).send({})).status).toBe(200);
    const wp = await walletPage(await chain.wallet({ eth: false }));
    const res = await wp.page.goto(`${base}/invoices/${created.body.id}`);
    expect(res?.headers()['content-security-policy']).toContain("script-src 'self'");
    await seeText(wp.page, 'Awaiting payment');
    await seeText(wp.page, '549.99 USDC');
    expect(await horizontalOverflow(wp.page)).toBeLessThanOrEqual(0);
    await screenshot(wp.page, 'invoice');
    await wp.page.getByRole('link', { name: 'Pay 549.99 USDC' }).click();
    await wp.page.locator('main[data-page="checkout"][data-ready="true"]').waitFor({ timeout: 30_000 });
    await seeText(wp.page, '549.99 USDC');
    expect(await horizontalOverflow(wp.page)).toBeLessThanOrEqual(0);
    expect(wp.errors).toEqual([]);
  });

  it('the sandbox identity page completes the check with its form', async () => {
    const w = await chain.wallet({ eth: false });
    const org = await createOrg(t.app, { payoutAddress: w.address });
    const started = await t.http.post('/api/v1/verification/start').set('X-Api-Key', org.key).send({});
    expect(started.status).toBe(200);
    const token = new URL(started.body.verificationUrl as string).pathname.split('/').pop()!;
    const wp = await walletPage(w);
    await wp.page.goto(`${base}/verify/${token}`);
    await seeText(wp.page, 'Identity check for Test Org');
    expect(await horizontalOverflow(wp.page)).toBeLessThanOrEqual(0);
    await screenshot(wp.page, 'verify');
    await wp.page.getByRole('button', { name: 'Complete verification' }).click();
    await seeText(wp.page, 'Identity verified. You can close this page.');
    expect((await t.http.get('/api/v1/verification').set('X-Api-Key', org.key)).body.identity).toMatchObject({ status: 'verified' });
    expect(wp.errors).toEqual([]);
  });

  it('the agent owner turns the session signer off with an EnableSigner signature; another wallet is told it is not the owner', async () => {
    const agent = await createAgent(t, chain, { enable: true });
    const stranger = await walletPage(await chain.wallet({ eth: false }));
    await stranger.page.goto(`${base}/agents/${agent.agentId}/signer`);
    await stranger.page.locator('main[data-ready="true"]').waitFor({ state: 'attached' });
    await stranger.page.getByRole('button', { name: 'Connect wallet' }).click();
    await seeText(stranger.page, /is not the owner of this agent/);
    expect(await stranger.page.getByRole('button', { name: /session signer/ }).count()).toBe(0);

    const wp = await walletPage(agent.owner);
    await wp.page.goto(`${base}/agents/${agent.agentId}/signer`);
    await wp.page.locator('main[data-ready="true"]').waitFor({ state: 'attached' });
    await seeText(wp.page, 'Session signer enabled');
    await connect(wp);
    expect(await horizontalOverflow(wp.page)).toBeLessThanOrEqual(0);
    await screenshot(wp.page, 'agent-signer');
    await wp.page.getByRole('button', { name: 'Disable the session signer' }).click();
    await seeText(wp.page, /^Session signer disabled\./);
    await seeText(wp.page, 'Enable the session signer');
    const [row]: Array<{ signer_enabled: boolean }> = await t.dataSource.query('SELECT signer_enabled FROM agents WHERE id = $1', [agent.agentId]);
    expect(row.signer_enabled).toBe(false);
    expect(JSON.parse((wp.calls.find(([m]) => m === 'eth_signTypedData_v4')![1] as string[])[1])).toMatchObject({ primaryType: 'EnableSigner', message: { agentId: agent.agentId, enabled: false } });
    expect(wp.errors).toEqual([]);
  });

  it('serves the script by content hash with a long cache, and every page with the strict CSP', async () => {
    const checkout = await createCheckout(t, merchant, { amount: '1' });
    const html = await t.http.get(`/checkout/${checkout.id}`);
    expect(html.headers['content-security-policy']).toBe(
      "default-src 'none';script-src 'self';style-src 'unsafe-inline';connect-src 'self';img-src 'self';form-action 'self';base-uri 'none';frame-ancestors 'none'",
    );
    const src = /<script defer src="(\/assets\/pay\.js\?v=[0-9a-f]{16})"><\/script>/.exec(html.text)?.[1];
    expect(src).toBeDefined();
    expect(html.text).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/); // no inline script
    const js = await t.http.get(src!);
    expect(js.status).toBe(200);
    expect(js.headers['content-type']).toMatch(/^application\/javascript/);
    expect(js.headers['cache-control']).toBe('public, max-age=31536000, immutable');
  });
});
