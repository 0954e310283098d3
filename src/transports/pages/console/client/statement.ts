/**
 * The console's Statement page (DESIGN §21, §19): daily USDC volume in and out of the organisation
 * over 30 or 90 days, drawn as SVG bars from `GET /api/v1/balance-transactions` (every page of the
 * window, through the SDK), the totals, and the CSV statement of the same window
 * (`/balance-transactions/export`, offered as a file). Amounts stay decimal text and are summed as
 * bigint base units; text is written as text nodes only.
 */
import { errorFromResponse } from '../../../../../packages/sdk/src/errors';
import { pcp, type Schemas } from './api';
import { attempt } from './dom';

const SVG = 'http://www.w3.org/2000/svg';
const DAY_MS = 86_400_000;

type Tx = Schemas['BalanceTransactionDto'];

/** Signed decimal text → base units (`"-0.40"` → -400000n). */
function units(text: string): bigint {
  const negative = text.startsWith('-');
  const [whole, fraction = ''] = text.replace('-', '').split('.');
  const value = BigInt(whole) * 1_000_000n + BigInt(fraction.padEnd(6, '0').slice(0, 6));
  return negative ? -value : value;
}

/** Base units → decimal text with at least two decimals. */
function decimal(value: bigint): string {
  const sign = value < 0n ? '-' : '';
  const abs = value < 0n ? -value : value;
  let fraction = (abs % 1_000_000n).toString().padStart(6, '0').replace(/0+$/, '');
  if (fraction.length < 2) fraction = fraction.padEnd(2, '0');
  return `${sign}${abs / 1_000_000n}.${fraction}`;
}

function el(tag: string, attrs: Record<string, string> = {}, ...children: Array<Node | string>): HTMLElement {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  node.append(...children);
  return node;
}

function svg(tag: string, attrs: Record<string, string | number>): SVGElement {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  return node;
}

/** Every balance transaction with block time in [from, to), newest first. @throws PcpError when a page is refused. */
async function transactions(from: Date, to: Date): Promise<Tx[]> {
  const rows: Tx[] = [];
  for await (const tx of pcp.list('/api/v1/balance-transactions', { params: { query: { limit: 100, 'created[gte]': from.toISOString(), 'created[lt]': to.toISOString() } } })) rows.push(tx);
  return rows;
}

/** The CSV statement of [from, to) (`text/csv`, the export's own columns) as a file. @throws PcpError when refused. */
async function statementCsv(from: Date, to: Date): Promise<Blob> {
  const { data, error, response } = await pcp.raw.GET('/api/v1/balance-transactions/export', { params: { query: { from: from.toISOString(), to: to.toISOString() } }, parseAs: 'blob' });
  if (!response.ok || !data) throw errorFromResponse(response, error);
  return data;
}

/** Per UTC day of the window: money in (positive rows) and out (negative rows, as a positive figure). */
function daily(rows: Tx[], from: Date, days: number): Array<{ day: string; in: bigint; out: bigint }> {
  const buckets = Array.from({ length: days }, (_, i) => ({ day: new Date(from.getTime() + i * DAY_MS).toISOString().slice(0, 10), in: 0n, out: 0n }));
  for (const r of rows) {
    const i = Math.floor((Date.parse(r.blockTimestamp) - from.getTime()) / DAY_MS);
    const b = buckets[i];
    if (!b) continue;
    const v = units(r.amount);
    if (v > 0n) b.in += v;
    else b.out -= v;
  }
  return buckets;
}

/** The bar chart: one column per day, money in above the axis, money out below. */
function chart(buckets: ReturnType<typeof daily>): SVGElement {
  const width = 720;
  const half = 90;
  const max = buckets.reduce((m, b) => (b.in > m ? b.in : b.out > m ? b.out : m), 1n);
  const bar = width / buckets.length;
  const scale = (v: bigint) => Number((v * BigInt(half * 1000)) / max) / 1000;
  const root = svg('svg', { id: 'statement-chart', viewBox: `0 0 ${width} ${half * 2 + 2}`, width: '100%', role: 'img', 'aria-label': 'Daily USDC volume in and out' });
  root.append(svg('line', { x1: 0, x2: width, y1: half + 1, y2: half + 1, stroke: '#8c959f' }));
  buckets.forEach((b, i) => {
    const x = i * bar + bar * 0.15;
    const w = bar * 0.7;
    if (b.in > 0n) {
      const r = svg('rect', { x, y: half + 1 - scale(b.in), width: w, height: scale(b.in), fill: '#1a7f37', 'data-day': b.day, 'data-in': decimal(b.in) });
      r.append(Object.assign(svg('title', {}), { textContent: `${b.day}: in ${decimal(b.in)} USDC` }));
      root.append(r);
    }
    if (b.out > 0n) {
      const r = svg('rect', { x, y: half + 1, width: w, height: scale(b.out), fill: '#cf222e', 'data-day': b.day, 'data-out': decimal(b.out) });
      r.append(Object.assign(svg('title', {}), { textContent: `${b.day}: out ${decimal(b.out)} USDC` }));
      root.append(r);
    }
  });
  return root;
}

/**
 * Renders the Statement page into `content` for the signed-in organisation.
 * @throws PcpError when a read is refused.
 */
export async function statementPage(content: HTMLElement, days = 30): Promise<void> {
  const now = new Date();
  const to = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()) + DAY_MS);
  const from = new Date(to.getTime() - days * DAY_MS);
  const rows = await transactions(from, to);
  const buckets = daily(rows, from, days);
  const totalIn = buckets.reduce((s, b) => s + b.in, 0n);
  const totalOut = buckets.reduce((s, b) => s + b.out, 0n);
  const choose = (n: number) => {
    const button = el('button', { type: 'button', id: `statement-${n}d`, ...(n === days ? { 'aria-pressed': 'true' } : {}) }, `${n} days`);
    button.addEventListener('click', () => void attempt(() => statementPage(content, n)));
    return button;
  };
  const download = el('button', { type: 'button', id: 'statement-csv' }, 'Download CSV');
  download.addEventListener('click', () => {
    void attempt(async () => {
      const blob = await statementCsv(from, to);
      const link = el('a', { href: URL.createObjectURL(blob), download: `statement_${from.toISOString().slice(0, 10)}_${to.toISOString().slice(0, 10)}.csv` });
      document.body.append(link);
      link.click();
      link.remove();
    });
  });
  content.replaceChildren(
    el('p', {}, choose(30), ' ', choose(90), ' ', download),
    el(
      'p',
      { id: 'statement-totals' },
      `${from.toISOString().slice(0, 10)} – ${new Date(to.getTime() - DAY_MS).toISOString().slice(0, 10)} (UTC): in `,
      el('strong', { id: 'statement-in' }, decimal(totalIn)),
      ' · out ',
      el('strong', { id: 'statement-out' }, decimal(totalOut)),
      ' · net ',
      el('strong', { id: 'statement-net' }, decimal(totalIn - totalOut)),
      ` USDC, ${rows.length} transactions`,
    ),
    chart(buckets),
  );
}
