import type { INestApplicationContext } from '@nestjs/common';
import type { Wallet } from 'ethers';
import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startRelayerWorker } from './agents';
import { createTestApp, type TestApp } from './app';
import { launchChromium } from './browser';
import { createCheckout, fundingTerms, indexUntilStatus, TestChain, USDC } from './chain';
import type { ConsoleLogin } from './console';
import { createOrg, type TestOrg } from './factories';

/** What a console browser test runs against: the api listening on a port (`base`), anvil, headless chromium. */
export interface ConsoleBrowserWorld {
  t: TestApp;
  chain: TestChain;
  browser: Browser;
  /** `http://127.0.0.1:<port>` of the listening api. */
  base: string;
}

/**
 * The shared fixture of the console's browser tests (jest `beforeAll`/`afterAll` of the calling
 * `describe`): the test app listening on a free port, a TestChain, chromium, and with `relayer` a
 * relayer worker (for gasless sends). The returned object is filled in before the first test.
 */
export function useConsoleBrowser(options: { relayer?: boolean } = {}): ConsoleBrowserWorld {
  const world = {} as ConsoleBrowserWorld;
  let worker: INestApplicationContext | undefined;
  beforeAll(async () => {
    world.t = await createTestApp();
    await world.t.app.listen(0, '127.0.0.1');
    world.base = `http://127.0.0.1:${(world.t.app.getHttpServer().address() as AddressInfo).port}`;
    world.chain = new TestChain();
    if (options.relayer) worker = await startRelayerWorker();
    world.browser = await launchChromium();
  });
  afterAll(async () => {
    await world.browser?.close();
    await worker?.close();
    await world.t?.close();
    world.chain?.close();
  });
  return world;
}

/** A released checkout: its organisation's payout wallet (`owner`), the buyer, the organisation and the checkout. */
export interface ReleasedCheckout {
  owner: Wallet;
  buyer: Wallet;
  org: TestOrg;
  checkout: { id: string };
}

/**
 * A checkout of `amount` (decimal USDC text) to a new organisation paid out to a new wallet, funded
 * by a new buyer holding 100 USDC (EIP-3009 authorization), released by the buyer, and indexed until
 * the API answers it `released`.
 */
export async function releasedCheckout({ t, chain }: ConsoleBrowserWorld, amount: string): Promise<ReleasedCheckout> {
  const owner = await chain.wallet();
  const buyer = await chain.wallet({ usdc: 100n * USDC });
  const org = await createOrg(t.app, { payoutAddress: owner.address });
  const checkout = await createCheckout(t, org, { amount });
  const { funding, terms } = await fundingTerms(t, checkout.id, buyer.address);
  await chain.fundWithAuthorization(buyer, terms, funding.termsSignature);
  await indexUntilStatus(t, org, checkout.id, 'funded');
  await chain.act(buyer, 'release', terms.escrowKey);
  await indexUntilStatus(t, org, checkout.id, 'released');
  return { owner, buyer, org, checkout };
}

/** Waits until the console page's script has run (`<main data-ready="true">`). */
export function consoleReady(page: Page): Promise<void> {
  return page.locator('main[data-ready="true"]').waitFor({ state: 'attached', timeout: 30_000 });
}

/** Waits for `text` on the page; on timeout the error carries what the page's status region said instead. */
export function seeText(page: Page, text: string | RegExp, timeout = 60_000): Promise<void> {
  return page.getByText(text).first().waitFor({ state: 'visible', timeout }).catch(async (err: Error) => {
    throw new Error(`${err.message}\nThe page said: ${await page.locator('#message').textContent().catch(() => '?')}`);
  });
}

/**
 * Puts `login`'s session cookie in `context` and opens the console page at `path` (e.g.
 * `/console/orgs/<id>/statement`) in `page`: it must answer 200, then its script must finish.
 */
export async function openConsolePage(world: ConsoleBrowserWorld, context: BrowserContext, page: Page, login: ConsoleLogin, path: string): Promise<void> {
  const [name, value] = login.cookie.split('=');
  await context.addCookies([{ name, value, url: world.base }]);
  const res = await page.goto(`${world.base}${path}`);
  if (res?.status() !== 200) throw new Error(`GET ${path}: ${res?.status()}`);
  await consoleReady(page);
}
