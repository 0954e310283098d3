import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { getBytes, type Wallet } from 'ethers';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

/** Debian's chromium (apt-get install chromium); `.ci/run` installs it when missing. */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/**
 * Whether the browser suite can run here. Without chromium it skips with a loud message, except
 * under CI (`CI` set), where a missing browser fails the run instead of hiding the suite.
 */
export function chromiumAvailable(suite: string): boolean {
  if (existsSync(CHROMIUM_PATH)) return true;
  const message = `\n${'!'.repeat(78)}\n!! ${suite}: SKIPPED: no chromium at ${CHROMIUM_PATH}.\n!! Install it (apt-get install chromium) or set CHROMIUM_PATH; under CI this fails.\n${'!'.repeat(78)}\n`;
  if (process.env.CI) throw new Error(message);
  console.warn(message);
  return false;
}

/** Headless chromium with a fresh temporary profile, no network services of its own. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

/** How the injected test wallet answers (changeable between steps of one test). */
export interface WalletBehaviour {
  /** The Node-side anvil account that signs (connected to anvil's provider for `eth_sendTransaction`). */
  wallet: Wallet;
  /** The chain id the wallet reports (`eth_chainId`). */
  chainId: number;
  /** Refuse `wallet_switchEthereumChain` with EIP-1193 4001 instead of switching. */
  refuseSwitch?: boolean;
  /** Refuse `eth_signTypedData_v4` with EIP-1193 4001 (the user clicked Reject). */
  rejectSignatures?: boolean;
  /** Refuse `eth_requestAccounts` with 4001. */
  rejectConnect?: boolean;
}

/** A browser page with the injected wallet, and every wallet request the page made. */
export interface WalletPage {
  page: Page;
  context: BrowserContext;
  behaviour: WalletBehaviour;
  /** `[method, params]` of every EIP-1193 request, in order. */
  calls: Array<[string, unknown]>;
  /** Console errors and page errors (CSP violations surface here). */
  errors: string[];
  close(): Promise<void>;
}

const rpcError = (code: number, message: string) => ({ error: { code, message } });

/**
 * A fresh browser context (360 px wide unless `viewport`) whose pages see an EIP-1193 wallet that
 * announces itself by EIP-6963 (`eip6963:announceProvider`, answering `eip6963:requestProvider`)
 * and forwards every request to Node through `page.exposeFunction`: accounts are `behaviour.wallet`,
 * `personal_sign` (EIP-191) with `Wallet.signMessage`, typed data is signed with ethers `Wallet.signTypedData` (the EIP712Domain entry dropped, as
 * ethers derives it), `eth_chainId` reports `behaviour.chainId`, `wallet_switchEthereumChain`
 * switches unless `refuseSwitch`, `eth_sendTransaction` is sent by the wallet (connected to anvil) and
 * `eth_getTransactionReceipt` read from its provider. Everything else answers 4200 (unsupported method).
 */
export async function openWalletPage(browser: Browser, behaviour: WalletBehaviour, viewport = { width: 360, height: 780 }): Promise<WalletPage> {
  const context = await browser.newContext({ viewport, deviceScaleFactor: 1, locale: 'en-US', timezoneId: 'UTC' });
  const calls: Array<[string, unknown]> = [];
  const errors: string[] = [];
  await context.exposeFunction('__pcpTestWallet', async (method: string, paramsJson: string) => {
    const params = paramsJson ? (JSON.parse(paramsJson) as unknown[]) : [];
    calls.push([method, params]);
    const b = behaviour;
    switch (method) {
      case 'eth_requestAccounts':
        return b.rejectConnect ? rpcError(4001, 'User rejected the request.') : { result: [b.wallet.address] };
      case 'eth_accounts':
        return { result: [b.wallet.address] };
      case 'eth_chainId':
        return { result: `0x${b.chainId.toString(16)}` };
      case 'wallet_switchEthereumChain': {
        if (b.refuseSwitch) return rpcError(4001, 'User rejected the request.');
        b.chainId = Number((params[0] as { chainId: string }).chainId);
        return { result: null };
      }
      case 'personal_sign': {
        if (b.rejectSignatures) return rpcError(4001, 'User rejected the request.');
        const [hex, address] = params as [string, string];
        if (address.toLowerCase() !== b.wallet.address.toLowerCase()) return rpcError(4100, 'Unknown account');
        return { result: await b.wallet.signMessage(getBytes(hex)) };
      }
      case 'eth_signTypedData_v4': {
        if (b.rejectSignatures) return rpcError(4001, 'User rejected the request.');
        const [address, json] = params as [string, string];
        if (address.toLowerCase() !== b.wallet.address.toLowerCase()) return rpcError(4100, 'Unknown account');
        const data = JSON.parse(json) as { domain: Record<string, unknown>; types: Record<string, Array<{ name: string; type: string }>>; message: Record<string, unknown> };
        const types = Object.fromEntries(Object.entries(data.types).filter(([k]) => k !== 'EIP712Domain'));
        return { result: await b.wallet.signTypedData(data.domain, types, data.message) };
      }
      case 'eth_sendTransaction': {
        if (b.rejectSignatures) return rpcError(4001, 'User rejected the request.');
        const [tx] = params as [{ from: string; to: string; data?: string; value?: string }];
        if (tx.from.toLowerCase() !== b.wallet.address.toLowerCase()) return rpcError(4100, 'Unknown account');
        const sent = await b.wallet.sendTransaction({ to: tx.to, data: tx.data, value: tx.value ? BigInt(tx.value) : undefined });
        return { result: sent.hash };
      }
      case 'eth_getTransactionReceipt': {
        const receipt = await b.wallet.provider!.getTransactionReceipt((params as [string])[0]);
        return { result: receipt ? { transactionHash: receipt.hash, status: `0x${(receipt.status ?? 0).toString(16)}`, blockNumber: `0x${receipt.blockNumber.toString(16)}` } : null };
      }
      default:
        return rpcError(4200, `Unsupported method ${method}`);
    }
  });
  await context.addInitScript(() => {
    const w = window as unknown as { __pcpTestWallet(method: string, params: string): Promise<{ result?: unknown; error?: { code: number; message: string } }> };
    const listeners: Record<string, Array<(...args: unknown[]) => void>> = {};
    const provider = {
      isTestWallet: true,
      async request({ method, params }: { method: string; params?: unknown }) {
        const answer = await w.__pcpTestWallet(method, params === undefined ? '' : JSON.stringify(params));
        if (answer.error) throw Object.assign(new Error(answer.error.message), { code: answer.error.code });
        if (method === 'wallet_switchEthereumChain') for (const h of listeners.chainChanged ?? []) h(params);
        return answer.result;
      },
      on(event: string, handler: (...args: unknown[]) => void) {
        (listeners[event] ??= []).push(handler);
      },
      removeListener(event: string, handler: (...args: unknown[]) => void) {
        listeners[event] = (listeners[event] ?? []).filter((h) => h !== handler);
      },
    };
    const detail = Object.freeze({
      info: { uuid: '7f1c2f0e-3c1a-4b5e-9a55-9b1f3f0e2a11', name: 'Test Wallet', icon: 'data:image/svg+xml,<svg xmlns="http://www.w3.org/2000/svg"/>', rdns: 'test.pcp.wallet' },
      provider,
    });
    const announce = () => window.dispatchEvent(new CustomEvent('eip6963:announceProvider', { detail }));
    window.addEventListener('eip6963:requestProvider', announce);
    announce();
  });
  const page = await context.newPage();
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(m.text());
  });
  page.on('pageerror', (e) => errors.push(e.message));
  return { page, context, behaviour, calls, errors, close: () => context.close() };
}

/**
 * Where screenshots go: docs/screenshots when SCREENSHOTS=docs (`npm run screenshots`, the images
 * README.md shows), else .local/screenshots (every test run still takes them).
 */
export function screenshotDir(): string {
  const root = join(__dirname, '..', '..');
  const dir = process.env.SCREENSHOTS === 'docs' ? join(root, 'docs', 'screenshots') : join(root, '.local', 'screenshots');
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** A full-page PNG of `page` as `<name>.png` in {@link screenshotDir}. */
export async function screenshot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(screenshotDir(), `${name}.png`), fullPage: true, animations: 'disabled', caret: 'hide' });
}

/** The page is readable at its width: nothing scrolls sideways. */
export async function horizontalOverflow(page: Page): Promise<number> {
  return page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
}
