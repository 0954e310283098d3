/** DOM helpers of the console pages: elements built from text nodes only, tables, forms, the live region. */
import { say } from '../../pay/client/ui';
import { WalletError } from '../../pay/client/wallet';
import { PcpError } from './api';

/** A JSON object as the API returns it, read loosely where the page only prints it. */
export type Row = Record<string, unknown>;

/** The page's `<main id="page">` data attributes (page, org, item, csrf, chain-id, address, usdc). */
export const data = document.getElementById('page')!.dataset;

/** `h('tag', {attr}, ...children)`: DOM built from text nodes only. */
export function h(tag: string, attrs: Record<string, string | boolean | ((e: Event) => void)> = {}, ...children: Array<Node | string | null | undefined>): HTMLElement {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (typeof v === 'function') el.addEventListener(k, v);
    else if (v === true) el.setAttribute(k, '');
    else if (v !== false) el.setAttribute(k, v);
  }
  for (const c of children) if (c !== null && c !== undefined) el.append(c);
  return el;
}

/** A value as display text: '—' for none, JSON for objects. */
export function text(v: unknown): string {
  if (v === null || v === undefined) return '—';
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return v.toString();
  return JSON.stringify(v);
}
/** The page's content area. */
export const content = () => document.getElementById('content')!;
/** This organisation's console base path. */
export const orgBase = () => `/console/orgs/${data.org}`;

/** Runs `work`, reporting an API error in the live region. */
export async function attempt(work: () => Promise<void>): Promise<void> {
  try {
    await work();
  } catch (err) {
    if (err instanceof PcpError) say(`${err.message} (${err.code}${typeof err.details?.reason === 'string' ? `: ${err.details.reason}` : ''})`, 'bad');
    else if (err instanceof WalletError) say(err.message, 'bad');
    else say(`Something went wrong: ${(err as Error).message}`, 'bad');
  }
}

/** A table of `rows` with one cell function per column; each row carries `data-id`. */
export function table(rows: Row[], columns: Array<[string, (r: Row) => Node | string]>, id: string): HTMLElement {
  return h(
    'table',
    { id },
    h('thead', {}, h('tr', {}, ...columns.map(([label]) => h('th', {}, label)))),
    h('tbody', {}, ...rows.map((r) => h('tr', { 'data-id': typeof r.id === 'string' ? r.id : '' }, ...columns.map(([, cell]) => h('td', {}, cell(r)))))),
  );
}

/** A form's fields as trimmed strings. */
export function formValues(form: HTMLFormElement): Record<string, string> {
  return Object.fromEntries([...new FormData(form).entries()].map(([k, v]) => [k, typeof v === 'string' ? v.trim() : '']));
}

/** Shows a secret once with a copy button. */
export function showSecret(label: string, secret: string): void {
  const code = h('code', { id: 'secret' }, secret);
  const copy = h('button', { type: 'button', click: () => void navigator.clipboard?.writeText(secret).then(() => say('Copied.', 'ok')) }, 'Copy');
  document.getElementById('secret-panel')?.remove();
  content().prepend(h('div', { id: 'secret-panel', class: 'panel' }, h('strong', {}, label), h('p', { class: 'muted' }, 'Shown once: store it now.'), code, ' ', copy));
}

