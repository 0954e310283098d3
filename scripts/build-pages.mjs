#!/usr/bin/env node
// Bundles the hosted pages' one script (docs/architecture.md §16) with esbuild:
// src/modules/pay-page/client/main.ts (TypeScript, viem) → dist/pay-page/pay.js, minified, for
// browsers. Part of `npm run build` (after nest build, which empties dist/). The api serves it as
// /assets/pay.js?v=<content hash>.
import { build } from 'esbuild';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outfile = join(root, 'dist', 'pay-page', 'pay.js');
const result = await build({
  entryPoints: [join(root, 'src', 'modules', 'pay-page', 'client', 'main.ts')],
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
