import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { escapeHtml, MESSAGE_REGION, renderShell } from '../pay/page-shell';

/** Path of the console's bundled script (esbuild, scripts/build-pages.mjs). */
export const CONSOLE_SCRIPT_PATH = '/console/assets/console.js';

/** The console bundle's bytes and content hash, read once; null when `npm run build` has not produced it. */
let cached: { body: Buffer; hash: string } | null | undefined;
export function consoleBundle(): { body: Buffer; hash: string } | null {
  if (cached !== undefined) return cached;
  for (const candidate of [join(__dirname, '..', '..', '..', '..', 'console', 'console.js'), join(__dirname, '..', '..', '..', '..', 'dist', 'console', 'console.js')]) {
    if (existsSync(candidate)) {
      const body = readFileSync(candidate);
      return (cached = { body, hash: createHash('sha256').update(body).digest('hex').slice(0, 16) });
    }
  }
  return (cached = null);
}

/** The console's sections (docs/architecture.md §19), in navigation order. */
export const SECTIONS = [
  ['overview', 'Overview'],
  ['keys', 'API keys'],
  ['oauth-clients', 'OAuth clients'],
  ['agents', 'Agents'],
  ['webhooks', 'Webhooks'],
  ['checkouts', 'Checkouts'],
  ['escrows', 'Escrows'],
  ['invoices', 'Invoices'],
  ['offerings', 'Offerings'],
  ['statement', 'Statement'],
  ['verification', 'Verification'],
] as const;
export type Section = (typeof SECTIONS)[number][0];

const WALLET_PANEL = `<div id="wallet" class="panel" hidden><button id="connect" class="primary" type="button">Connect wallet</button><div id="providers"></div><p id="account" class="muted"></p><div id="actions"></div></div>`;

function page(title: string, main: string, attrs: Record<string, string>): string {
  const bundle = consoleBundle();
  const head = bundle ? `<script defer src="${CONSOLE_SCRIPT_PATH}?v=${bundle.hash}"></script>\n` : '';
  return renderShell({ title: `${title} · Console`, main, mainAttrs: attrs, head: `${head}<style>html body{max-width:64rem}nav a{margin-right:.8rem;white-space:nowrap;display:inline-block}nav{margin:.5rem 0 1rem;border-bottom:1px solid #d0d7de;padding-bottom:.5rem}input,select,textarea{font:inherit;padding:.35rem;margin:.2rem 0;max-width:100%}label{display:block;margin:.4rem 0}pre{white-space:pre-wrap;font-size:.8rem;background:#f6f8fa;padding:.5rem}</style>` });
}

/** The sign-in page: "Sign in with Ethereum" (EIP-4361) once a wallet is connected. */
export function renderSignIn(opts: { chainId: number }): string {
  return page(
    'Sign in',
    `<h1>Console</h1><p>Sign in with the wallet that owns your organisation or agents.</p>${WALLET_PANEL}${MESSAGE_REGION}`,
    { page: 'signin', 'chain-id': String(opts.chainId) },
  );
}

/** The signed-in home: the organisation switcher and self-serve creation. */
export function renderHome(opts: { address: string; csrf: string; chainId: number; organizations: Array<{ id: string; name: string; handle: string }>; agents?: Array<{ id: string; slug: string; organizationName: string }> }): string {
  const items = opts.organizations.map((o) => `<li><a href="/console/orgs/${escapeHtml(o.id)}">${escapeHtml(o.name)}</a> <span class="muted">@${escapeHtml(o.handle)}</span></li>`).join('');
  const agents = (opts.agents ?? []).map((a) => `<li><a href="/console/agents/${escapeHtml(a.id)}">${escapeHtml(a.slug)}</a> <span class="muted">of ${escapeHtml(a.organizationName)}</span></li>`).join('');
  return page(
    'Organisations',
    `<h1>Organisations</h1><p class="muted">Signed in as <code id="address">${escapeHtml(opts.address)}</code> <button id="sign-out" type="button">Sign out</button></p>
<ul id="organizations">${items || '<li class="muted">You own no organisation yet.</li>'}</ul>
${agents ? `<h2>Agents you own</h2><ul id="owned-agents">${agents}</ul>` : ''}
<form id="create-org" class="panel"><h2>Create an organisation</h2><label>Name <input name="name" required maxlength="120"></label><label>Handle <input name="handle" required></label><label>Payout address <input name="payoutAddress" placeholder="${escapeHtml(opts.address)}"></label><button class="primary" type="submit">Create</button></form>
${MESSAGE_REGION}`,
    { page: 'home', csrf: opts.csrf, 'chain-id': String(opts.chainId), address: opts.address },
  );
}

/**
 * An organisation's section page: the switcher link, navigation and an empty region the console
 * script fills from `/api/v1` as a `console` principal (`data-org`, `data-csrf`; `data-usdc` is the
 * USDC contract the wallet's top-up transfer calls).
 */
export function renderSection(opts: { section: Section; item?: string; address: string; csrf: string; chainId: number; usdc: string; organization: { id: string; name: string; handle: string }; agentOwner?: boolean }): string {
  const base = `/console/orgs/${escapeHtml(opts.organization.id)}`;
  // An agent's owner who does not own its organisation sees that agent only (DESIGN §19).
  const nav = opts.agentOwner
    ? `<a href="/console/agents/${escapeHtml(opts.item ?? '')}" aria-current="page">Agent</a>`
    : SECTIONS.map(([s, label]) => `<a href="${base}${s === 'overview' ? '' : `/${s}`}"${s === opts.section ? ' aria-current="page"' : ''}>${label}</a>`).join('');
  const title = SECTIONS.find(([s]) => s === opts.section)![1];
  return page(
    `${title} · ${opts.organization.name}`,
    `<p class="muted"><a href="/console">All organisations</a> · <strong>${escapeHtml(opts.organization.name)}</strong> · <code>${escapeHtml(opts.address)}</code> <button id="sign-out" type="button">Sign out</button></p>
<nav>${nav}</nav><h1>${escapeHtml(title)}</h1>${MESSAGE_REGION}${opts.item && ['agents', 'checkouts', 'escrows'].includes(opts.section) ? WALLET_PANEL : ''}<div id="content"></div>`,
    opts.agentOwner
      ? { page: opts.section, 'console-agent': opts.item ?? '', item: opts.item ?? '', csrf: opts.csrf, 'chain-id': String(opts.chainId), usdc: opts.usdc, address: opts.address }
      : { page: opts.section, org: opts.organization.id, item: opts.item ?? '', csrf: opts.csrf, 'chain-id': String(opts.chainId), usdc: opts.usdc, address: opts.address },
  );
}

/** 404 in the console shell (anything the signed-in address does not own). */
export function renderConsoleNotFound(): string {
  return page('Not found', '<h1>Not found</h1><p>Nothing here. <a href="/console">Back to your organisations</a>.</p>', { page: 'not-found' });
}
