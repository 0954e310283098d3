#!/usr/bin/env node
// Benchmark dispatcher for `npm run bench [-- <name>] [flags]`.
// The first argument names bench/<name>.mjs (default: checkout); that module's exported
// `main(args)` is awaited with the remaining arguments. An unknown name lists the available
// benchmarks and exits with code 2.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const benchDir = dirname(fileURLToPath(import.meta.url));
const DEFAULT = 'checkout';

/** Benchmarks are the bench/*.mjs files exporting `main` (helpers such as baseline-server.mjs do not). */
function availableBenchmarks() {
  return readdirSync(benchDir)
    .filter((f) => f.endsWith('.mjs') && f !== 'run.mjs')
    .filter((f) => /export\s+(async\s+)?function\s+main\s*\(/.test(readFileSync(join(benchDir, f), 'utf8')))
    .map((f) => f.slice(0, -'.mjs'.length))
    .sort();
}

const argv = process.argv.slice(2);
// `npm run bench -- --duration 5` keeps the default benchmark and passes the flags on.
const explicit = argv.length > 0 && !argv[0].startsWith('-');
const name = explicit ? argv[0] : DEFAULT;
const args = explicit ? argv.slice(1) : argv;
const available = availableBenchmarks();

if (!/^[a-z0-9][a-z0-9_-]*$/i.test(name) || !available.includes(name)) {
  console.error(`unknown benchmark ${JSON.stringify(name)}; available: ${available.join(', ') || '(none)'}`);
  console.error('usage: npm run bench [-- <name> [flags]]');
  process.exit(2);
}

try {
  const mod = await import(pathToFileURL(join(benchDir, `${name}.mjs`)).href);
  if (typeof mod.main !== 'function') throw new Error(`bench/${name}.mjs does not export main(args)`);
  await mod.main(args);
  process.exit(process.exitCode ?? 0);
} catch (err) {
  console.error(`bench ${name} failed: ${err?.stack ?? err}`);
  process.exit(1);
}
