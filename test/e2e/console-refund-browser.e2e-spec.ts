import { consoleSignIn } from '../support/console';
import { chromiumAvailable, openWalletPage, screenshot } from '../support/browser';
import { openConsolePage, releasedCheckout, seeText, useConsoleBrowser } from '../support/console-browser';
import { getCheckout, USDC } from '../support/chain';

jest.setTimeout(180_000);

const RUN = chromiumAvailable('the console Refund button in a real browser (test/e2e/console-refund-browser.e2e-spec.ts)');
const describeBrowser = RUN ? describe : describe.skip;

/**
 * The console's Refund button on a released checkout (DESIGN §21, issue 32) in headless chromium
 * against the real api, a relayer worker and anvil: without the receiving wallet at hand the page says
 * which wallet must sign and shows the typed data; with it connected, the amount is signed
 * (eth_signTypedData_v4), relayed gaslessly, and the buyer receives exactly that amount.
 */
describeBrowser('the console Refund button in a browser', () => {
  const world = useConsoleBrowser({ relayer: true });

  it('refunds 5.00 of a released 25.00 checkout: the seller wallet signs, the buyer gets exactly 5.00; unsigned, the page names the wallet and shows the typed data', async () => {
    const { t, chain } = world;
    const { owner, buyer, org, checkout } = await releasedCheckout(world, '25.00');
    const login = await consoleSignIn(t, owner);
    const wp = await openWalletPage(world.browser, { wallet: owner, chainId: Number(process.env.CHAIN_ID ?? 31337) }, { width: 1100, height: 900 });
    try {
      const { page } = wp;
      await openConsolePage(world, wp.context, page, login, `/console/orgs/${org.organizationId}/checkouts/${checkout.id}`);

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
