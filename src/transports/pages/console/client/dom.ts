/** DOM helpers of the console pages: elements built from text nodes only, tables, forms, the live region. */
import { say } from '../../pay/client/ui';
import { WalletError } from '../../pay/client/wallet';
import { PcpError } from './api';

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

/** A table column: its heading and the cell of one row. */
export type Column<T> = [string, (r: T) => Node | string];

/** The `data-id` of a row: its `id` when it has one (an API object's id), else empty. */
const rowId = (r: object): string => ('id' in r && typeof r.id === 'string' ? r.id : '');

/** A table of `rows` (typed by the API's schema of them) with one cell function per column; each row carries `data-id` (`key`, by default its `id`). */
export function table<T extends object>(rows: readonly T[], columns: Array<Column<T>>, id: string, key: (r: T) => string = rowId): HTMLElement {
  return h(
    'table',
    { id },
    h('thead', {}, h('tr', {}, ...columns.map(([label]) => h('th', {}, label)))),
    h('tbody', {}, ...rows.map((r) => h('tr', { 'data-id': key(r) }, ...columns.map(([, cell]) => h('td', {}, cell(r)))))),
  );
}

/** The fields of an API object as a two-column Field/Value table (`data-field` on each value). */
export function fieldsTable(item: object, id: string, skip: readonly string[] = []): HTMLElement {
  const rows = Object.entries(item).filter(([k]) => !skip.includes(k)).map(([k, v]: [string, unknown]) => ({ k, v }));
  return table(rows, [['Field', (r) => r.k], ['Value', (r) => h('span', { 'data-field': r.k }, text(r.v))]], id);
}

/** A form's fields as trimmed strings. */
export function formValues(form: HTMLFormElement): Record<string, string> {
  return Object.fromEntries([...new FormData(form).entries()].map(([k, v]) => [k, typeof v === 'string' ? v.trim() : '']));
}

/**
 * A panel form `#id`: its heading, `fields`, and the primary `submit` button. On submit (the browser's
 * own submit prevented) runs `onSubmit` with the form's trimmed values through {@link attempt}.
 */
export function panelForm(id: string, heading: string, submit: string, fields: Array<Node | string>, onSubmit: (values: Record<string, string>, form: HTMLFormElement) => Promise<void>): HTMLFormElement {
  const form = h('form', { id, class: 'panel' }, h('h2', {}, heading), ...fields, h('button', { class: 'primary', type: 'submit' }, submit)) as HTMLFormElement;
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    void attempt(() => onSubmit(formValues(form), form));
  });
  return form;
}

/** Shows a secret once with a copy button. */
export function showSecret(label: string, secret: string): void {
  const code = h('code', { id: 'secret' }, secret);
  const copy = h('button', { type: 'button', click: () => void navigator.clipboard?.writeText(secret).then(() => say('Copied.', 'ok')) }, 'Copy');
  document.getElementById('secret-panel')?.remove();
  content().prepend(h('div', { id: 'secret-panel', class: 'panel' }, h('strong', {}, label), h('p', { class: 'muted' }, 'Shown once: store it now.'), code, ' ', copy));
}

