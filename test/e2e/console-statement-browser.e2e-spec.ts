import { readFileSync } from 'node:fs';
import { consoleSignIn } from '../support/console';
import { chromiumAvailable, screenshot } from '../support/browser';
import { openConsolePage, releasedCheckout, useConsoleBrowser } from '../support/console-browser';

jest.setTimeout(180_000);

const RUN = chromiumAvailable('the console Statement page in a real browser (test/e2e/console-statement-browser.e2e-spec.ts)');
const describeBrowser = RUN ? describe : describe.skip;

/**
 * The console's Statement page (DESIGN §21, §19) in headless chromium against the real api and anvil:
 * an escrow release to the organisation shows as money in, drawn as an SVG bar, and the CSV the page
 * downloads adds up to the page's totals.
 */
describeBrowser('the console Statement page in a browser', () => {
  const world = useConsoleBrowser();

  it('shows a release as money in (chart and totals) and downloads a CSV whose rows add up to the totals', async () => {
    const { t, chain } = world;
    const { owner, org } = await releasedCheckout(world, '12.50');
    const login = await consoleSignIn(t, owner);
    const context = await world.browser.newContext({ acceptDownloads: true, viewport: { width: 1100, height: 900 } });
    try {
      const page = await context.newPage();
      // The page bins by the browser's UTC day; earlier files move the shared anvil's clock ahead, so the
      // browser runs at the chain's time, as a real chain and a real browser agree.
      await page.clock.setSystemTime(new Date((await chain.headTimestamp()) * 1000));
      await openConsolePage(world, context, page, login, `/console/orgs/${org.organizationId}/statement`);
      expect(await page.locator('#statement-in').textContent()).toBe('12.50');
      expect(await page.locator('#statement-out').textContent()).toBe('0.00');
      expect(await page.locator('#statement-chart rect[data-in]').count()).toBe(1);
      expect(await page.locator('#statement-chart rect[data-in]').getAttribute('data-in')).toBe('12.50');
      await screenshot(page, 'console-statement');

      const [download] = await Promise.all([page.waitForEvent('download'), page.locator('#statement-csv').click()]);
      const csv = readFileSync((await download.path())!, 'utf8').split('\r\n').filter((l) => l.length > 0);
      expect(csv[0]).toBe('id,type,amount,fee,net,currency,sourceType,sourceId,txHash,logIndex,blockNumber,blockTimestamp');
      expect(csv.slice(1).map((l) => l.split(',').slice(1, 3))).toEqual([['escrow_release', '12.50']]);

      await page.locator('#statement-90d').click();
      await page.locator('#statement-90d[aria-pressed="true"]').waitFor({ timeout: 30_000 });
      expect(await page.locator('#statement-in').textContent()).toBe('12.50');
      expect(await page.locator('#statement-chart rect').count()).toBe(1);
    } finally {
      await context.close();
    }
  });
});
