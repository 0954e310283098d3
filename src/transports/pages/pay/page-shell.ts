import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import escape from 'escape-html';

/** HTML-escapes text and attribute values (&, <, >, ", ') with the `escape-html` package. */
export const escapeHtml = (s: string): string => escape(s);

/** Path of the bundled page script, relative to the checkout host. */
export const SCRIPT_PATH = '/assets/pay.js';

/**
 * Where `npm run build` (scripts/build-pages.mjs, esbuild) writes the bundle: `dist/pay-page/pay.js`.
 * The same file is found from the compiled `dist/src/transports/pages/pay` and from the TypeScript
 * sources under `src/transports/pages/pay` (tests).
 */
export function bundlePath(): string | null {
  for (const candidate of [join(__dirname, '..', '..', '..', '..', 'pay-page', 'pay.js'), join(__dirname, '..', '..', '..', '..', 'dist', 'pay-page', 'pay.js')]) {
    if (existsSync(candidate)) return candidate;
  }
  return null;
}

/** The bundle's bytes and content hash (sha256, 16 hex), read once per process; null when it was not built. */
export interface PageBundle {
  body: Buffer;
  hash: string;
}

let cached: PageBundle | null | undefined;

/** Reads the built bundle once (see {@link bundlePath}); null when `npm run build` has not produced it. */
export function pageBundle(): PageBundle | null {
  if (cached !== undefined) return cached;
  const path = bundlePath();
  if (!path) return (cached = null);
  const body = readFileSync(path);
  cached = { body, hash: createHash('sha256').update(body).digest('hex').slice(0, 16) };
  return cached;
}

const CSS = `*{box-sizing:border-box}
body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:0 auto;padding:1.25rem 1rem 3rem;color:#1b1f24;background:#fff}
h1{font-size:1.4rem;margin:.2rem 0}h2{font-size:1.1rem;margin:1.5rem 0 .5rem}
.merchant{color:#57606a;margin:0}.amount{font-size:2rem;font-weight:600;margin:.3rem 0}
.status{display:inline-block;padding:.2rem .7rem;border-radius:1rem;background:#eef2f7}
.status[data-tone=ok]{background:#dafbe1;color:#116329}.status[data-tone=warn]{background:#fff8c5;color:#7d4e00}.status[data-tone=bad]{background:#ffebe9;color:#a40e26}
table{border-collapse:collapse;width:100%;font-size:.85rem}caption{text-align:left}th,td{text-align:left;padding:.3rem .6rem .3rem 0;vertical-align:top}td{overflow-wrap:anywhere}.n{text-align:right}
button,.button{font:inherit;display:inline-block;min-height:2.75rem;padding:.55rem 1.1rem;margin:.25rem .5rem .25rem 0;border-radius:.4rem;border:1px solid #9aa5b1;background:#fff;color:#1b1f24;cursor:pointer;text-decoration:none}
button.primary,.button.primary{background:#1b5fd1;border-color:#1b5fd1;color:#fff}button.danger{color:#a40e26;border-color:#a40e26}
button[disabled]{opacity:.55;cursor:not-allowed}
:focus-visible{outline:3px solid #f59e0b;outline-offset:2px}
form{display:inline-block}
.panel{border:1px solid #d0d7de;border-radius:.5rem;padding:1rem;margin:1rem 0}.panel h2{margin-top:0}
.message{min-height:1.5rem;margin:.75rem 0}.message[data-tone=bad]{color:#a40e26;font-weight:600}.message[data-tone=ok]{color:#116329;font-weight:600}
.muted{color:#57606a;font-size:.85rem}code{word-break:break-all}
details{margin:1rem 0}summary{cursor:pointer}
[hidden]{display:none!important}
@media (max-width:400px){body{padding:1rem .75rem 2rem}.amount{font-size:1.6rem}button,.button{width:100%;margin:.3rem 0}}`;

/**
 * The one layout of the hosted pages (docs/architecture.md §16): meta viewport, the shared CSS, a
 * the render function places {@link MESSAGE_REGION} (the `aria-live` region the script writes to); when `script` is set,
 * the bundled script by content hash (`/assets/pay.js?v=<hash>`, served with a long cache).
 * `main` carries `data-*` attributes the script reads (never inline script). `title` and `head`
 * are trusted markup built by the render functions, which escape every value they interpolate.
 */
export function renderShell(opts: { title: string; main: string; mainAttrs?: Record<string, string>; script?: boolean; head?: string }): string {
  const bundle = opts.script ? pageBundle() : null;
  const attrs = Object.entries(opts.mainAttrs ?? {})
    .map(([k, v]) => ` data-${k}="${escapeHtml(v)}"`)
    .join('');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${escapeHtml(opts.title)}</title>
${opts.head ?? ''}<style>${CSS}</style>
${bundle ? `<script defer src="${SCRIPT_PATH}?v=${bundle.hash}"></script>` : ''}
</head><body>
<main id="page"${attrs}>
${opts.main}
</main>
</body></html>`;
}

/** The polite live region the script writes status and errors to (one per page). */
export const MESSAGE_REGION = '<p id="message" class="message" role="status" aria-live="polite"></p>';

/** A plain 404 page in the shell. */
export function renderNotFound(what: string): string {
  return renderShell({ title: 'Not found', main: `<h1>Not found</h1><p>No such ${escapeHtml(what)}.</p>` });
}
