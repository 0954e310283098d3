import type { INestApplicationContext } from '@nestjs/common';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { createTestApp, TestApp } from '../support/app';
import { startRelayerWorker } from '../support/agents';
import { consoleSignIn } from '../support/console';
import { chromiumAvailable, launchChromium, openWalletPage, screenshot } from '../support/browser';
import { createCheckout, fundingTerms, getCheckout, indexUntilStatus, TestChain, USDC } from '../support/chain';
import { createOrg } from '../support/factories';

jest.setTimeout(180_000);

const RUN = chromiumAvailable('the console Refund button in a real browser (test/e2e/console-refund-browser.e2e-spec.ts)');
const describeBrowser = RUN ? describe : describe.skip;

const seeText = (page: Page, text: string | RegExp, timeout = 60_000) =>
  page.getByText(text).first().waitFor({ state: 'visible', timeout }).catch(async (err: Error) => {
    throw new Error(`${err.message}\nThe page said: ${await page.locator('#message').textContent().catch(() => '?')}`);
  });

/**
 * The console's Refund button on a released checkout (DESIGN §21, issue 32) in headless chromium
 * against the real api, a relayer worker and anvil: without the receiving wallet at hand the page says
 * which wallet must sign and shows the typed data; with it connected, the amount is signed
 * (eth_signTypedData_v4), relayed gaslessly, and the buyer receives exactly that amount.
 */
describeBrowser('the console Refund button in a browser', () => {
  let t: TestApp;
  let chain: TestChain;
  let worker: INestApplicationContext;
  let browser: Browser;
  let base: string;

  beforeAll(async () => {
    t = await createTestApp();
    await t.app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}`;
    chain = new TestChain();
    worker = await startRelayerWorker();
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await worker?.close();
    await t?.close();
    chain?.close();
  });

  it('refunds 5.00 of a released 25.00 checkout: the seller wallet signs, the buyer gets exactly 5.00; unsigned, the page names the wallet and shows the typed data', async () => {
    const owner = await chain.wallet();
    const buyer = await chain.wallet({ usdc: 100n * USDC });
    const org = await createOrg(t.app, { payoutAddress: owner.address });
    const checkout = await createCheckout(t, org, { amount: '25.00' });
    const { funding, terms } = await fundingTerms(t, checkout.id, buyer.address);
    await chain.fundWithAuthorization(buyer, terms, funding.termsSignature);
    await indexUntilStatus(t, org, checkout.id, 'funded');
    await chain.act(buyer, 'release', terms.escrowKey);
    await indexUntilStatus(t, org, checkout.id, 'released');

    const login = await consoleSignIn(t, owner);
    const wp = await openWalletPage(browser, { wallet: owner, chainId: Number(process.env.CHAIN_ID ?? 31337) }, { width: 1100, height: 900 });
    try {
      const { page } = wp;
      const [name, value] = login.cookie.split('=');
      await wp.context.addCookies([{ name, value, url: base }]);
      expect((await page.goto(`${base}/console/orgs/${org.organizationId}/checkouts/${checkout.id}`))?.status()).toBe(200);
      await page.locator('main[data-ready="true"]').waitFor({ state: 'attached', timeout: 30_000 });

      // No wallet connected: the refund is created, and the page names the wallet that must sign and shows what it signs.
      await page.getByLabel('Refund amount (USDC)').fill('1.00');
      await page.getByRole('button', { name: 'Refund', exact: true }).click();
      await page.locator('#refund-typed-data').waitFor({ state: 'visible', timeout: 30_000 });
      expect(await page.locator('#refund-from').textContent()).toBe(owner.address);
      const shown = JSON.parse((await page.locator('#refund-typed-data').textContent())!) as { primaryType: string; message: Record<string, string> };
      expect(shown).toMatchObject({ primaryType: 'TransferWithAuthorization', message: { from: owner.address, to: buyer.address, value: '1000000' } });
      expect(wp.calls.some(([m]) => m === 'eth_signTypedData_v4')).toBe(false);

      // With the receiving wallet connected: signed in the wallet, relayed, succeeded.
      const buyer0 = await chain.usdcBalance(buyer.address);
      const ownerEth0 = await chain.provider.getBalance(owner.address);
      await page.getByRole('button', { name: 'Connect wallet' }).click();
      await page.locator('#account[data-account]').waitFor({ state: 'attached', timeout: 30_000 });
      await page.getByLabel('Refund amount (USDC)').fill('5.00');
      await page.getByRole('button', { name: 'Refund', exact: true }).click();
      await seeText(page, /of 5\.00 USDC is succeeded/);
      await screenshot(page, 'console-refund');
      const signed = wp.calls.filter(([m]) => m === 'eth_signTypedData_v4').map(([, p]) => (p as string[])[0].toLowerCase());
      expect(signed).toEqual([owner.address.toLowerCase()]);
      expect((await chain.usdcBalance(buyer.address)) - buyer0).toBe(5n * USDC);
      expect(await chain.provider.getBalance(owner.address)).toBe(ownerEth0); // gasless for the seller
      expect(await getCheckout(t, org, checkout.id)).toMatchObject({ status: 'released', refundedAmount: '5.00' });
      const refunds = (await t.http.get('/api/v1/refunds').query({ limit: 10 }).set('X-Api-Key', org.key)).body.data as Array<{ amount: string; status: string }>;
      expect(refunds.map((r) => [r.amount, r.status]).sort()).toEqual([
        ['1.00', 'requires_signature'],
        ['5.00', 'succeeded'],
      ]);
    } finally {
      await wp.close();
    }
  });
});
