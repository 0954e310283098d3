#!/usr/bin/env node
// Bundles the hosted pages' one script (docs/architecture.md §16) with esbuild:
// src/transports/pages/pay/client/main.ts (TypeScript, viem) → dist/pay-page/pay.js and the console's
// src/transports/pages/console/client/main.ts → dist/console/console.js, minified, for browsers. Part of `npm run build` (after nest build, which empties dist/). The api serves it as
// /assets/pay.js?v=<content hash>.
import { build } from 'esbuild';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
for (const [entry, out] of [
  [['pay', 'client', 'main.ts'], ['pay-page', 'pay.js']],
  [['console', 'client', 'main.ts'], ['console', 'console.js']],
]) {
const outfile = join(root, 'dist', ...out);
const result = await build({
  entryPoints: [join(root, 'src', 'transports', 'pages', ...entry)],
  outfile,
  bundle: true,
  minify: true,
  format: 'iife',
  platform: 'browser',
  target: ['es2020', 'chrome100', 'firefox100', 'safari15'],
  legalComments: 'none',
  metafile: true,
  logLevel: 'warning',
});
const bytes = Object.values(result.metafile.outputs).reduce((n, o) => n + o.bytes, 0);
console.log(`pages: ${outfile.slice(root.length + 1)} (${Math.round(bytes / 1024)} kB)`);
}
