#!/usr/bin/env node
// Renders the spans of one traced checkout (written by test/integration/tracing.int-spec.ts to
// .local/trace-checkout.json) as a waterfall page and screenshots it with Debian's chromium, for
// docs/operations.md ("Traces"). No collector UI is installable here (Jaeger and Tempo are in
// neither the npm nor the Debian registry), so this draws what a collector would receive.
//   node scripts/render-trace.mjs [dump.json] [out.png]   (CHROMIUM_PATH, default /usr/bin/chromium)
// Express's per-middleware spans are folded into their request (pass --all to keep them).
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const args = process.argv.slice(2).filter((a) => a !== '--all');
const all = process.argv.includes('--all');
const root = join(import.meta.dirname, '..');
const dumpPath = args[0] ?? join(root, '.local', 'trace-checkout.json');
const outPath = args[1] ?? join(root, 'docs', 'screenshots', 'trace-checkout.png');
const { traceId, clientSpans, spans } = JSON.parse(readFileSync(dumpPath, 'utf8'));

const ms = (ns) => Number(BigInt(ns) / 1000n) / 1000;
const hidden = (s) => !all && /^(middleware - |router - )/.test(s.name);
const byId = new Map(spans.map((s) => [s.spanId, s]));
const visibleParent = (s) => {
  let p = byId.get(s.parentSpanId);
  while (p && hidden(p)) p = byId.get(p.parentSpanId);
  return p ? p.spanId : s.parentSpanId;
};
const clientLabel = { create: 'client: create checkout', funding: 'client: get funding terms', relay: 'client: relay signed funding' };
const rows = [];
const children = new Map();
for (const s of spans) {
  if (hidden(s)) continue;
  const p = visibleParent(s);
  children.set(p, [...(children.get(p) ?? []), s]);
}
const t0 = Math.min(...spans.map((s) => ms(s.startTimeUnixNano)));
const t1 = Math.max(...spans.map((s) => ms(s.endTimeUnixNano)));
const walk = (id, depth) => {
  for (const s of (children.get(id) ?? []).sort((a, b) => ms(a.startTimeUnixNano) - ms(b.startTimeUnixNano))) {
    rows.push({ depth, name: s.name, service: s.service.replace(/^payments-/, ''), start: ms(s.startTimeUnixNano) - t0, end: ms(s.endTimeUnixNano) - t0, links: s.links.length });
    walk(s.spanId, depth + 1);
  }
};
for (const [key, id] of Object.entries(clientSpans)) {
  const kids = spans.filter((s) => s.parentSpanId === id);
  rows.push({ depth: 0, name: clientLabel[key] ?? key, service: 'client', start: Math.min(...kids.map((s) => ms(s.startTimeUnixNano))) - t0, end: Math.max(...kids.map((s) => ms(s.endTimeUnixNano))) - t0, links: 0 });
  walk(id, 1);
}
const span = t1 - t0;
const esc = (s) => s.replace(/[&<>]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;' })[c]);
const html = `<!doctype html><meta charset="utf-8"><style>
body{font:12px/1.35 system-ui,sans-serif;margin:16px;color:#1f2328;background:#fff}
h1{font-size:15px;margin:0 0 2px} .sub{color:#59636e;margin-bottom:10px}
.row{display:grid;grid-template-columns:430px 70px 1fr;align-items:center;height:17px}
.row:nth-child(even){background:#f6f8fa} .name{white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.svc{font-size:10px;border-radius:3px;padding:0 4px;width:max-content;color:#fff}
.client{background:#6e7781}.api{background:#0969da}.worker{background:#8250df}
.track{position:relative;height:11px} .bar{position:absolute;height:11px;border-radius:2px;min-width:2px}
.bar.api{background:#54aeff}.bar.worker{background:#c297ff}.bar.client{background:#afb8c1}
.dur{position:absolute;font-size:10px;color:#59636e;white-space:nowrap;top:-2px}
.link{color:#bf8700;font-size:10px}
</style><h1>One checkout, one trace: create → relay funding → anvil → indexer → outbox → checkout.funded webhook</h1>
<div class="sub">trace ${traceId} · ${spans.length} spans from 2 processes (api, worker) · ${span.toFixed(0)} ms · exported over OTLP/HTTP by the real compiled processes in test/integration/tracing.int-spec.ts${all ? '' : ' · express middleware spans folded'}</div>
<div>${rows
  .map((r) => {
    const left = (r.start / span) * 100;
    const width = Math.max(((r.end - r.start) / span) * 100, 0.15);
    const dur = r.end - r.start;
    return `<div class="row"><div class="name" style="padding-left:${r.depth * 12}px">${esc(r.name)}${r.links ? ' <span class="link">[link → indexer pass]</span>' : ''}</div><div><span class="svc ${r.service}">${r.service}</span></div><div class="track"><div class="bar ${r.service}" style="left:${left}%;width:${width}%"></div><div class="dur" style="left:calc(${Math.min(left + width, 92)}% + 4px)">${dur < 1 ? dur.toFixed(2) : dur.toFixed(0)} ms</div></div></div>`;
  })
  .join('\n')}</div>`;
const htmlPath = join(root, '.local', 'trace-checkout.html');
writeFileSync(htmlPath, html);
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium', headless: true, args: ['--no-sandbox', '--disable-gpu'] });
const page = await browser.newPage({ viewport: { width: 1400, height: 400 }, deviceScaleFactor: 1 });
await page.goto(`file://${htmlPath}`);
await page.screenshot({ path: outPath, fullPage: true });
await browser.close();
console.log(`${rows.length} rows → ${outPath}`);
