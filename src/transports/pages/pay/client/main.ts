/**
 * The hosted pages' one script (docs/architecture.md §16), bundled by esbuild into
 * `dist/pay-page/pay.js` (scripts/build-pages.mjs) and served as `/assets/pay.js?v=<hash>`. It reads
 * which page it is on from `<main id="page" data-page>` and never runs inline code (strict CSP).
 */
import { startAgentSignerPage } from './agent-signer';
import { startCheckoutPage } from './checkout';

function start(): void {
  const root = document.getElementById('page');
  if (!root) return;
  if (root.dataset.page === 'checkout') startCheckoutPage(root);
  else if (root.dataset.page === 'agent-signer') startAgentSignerPage(root);
}

if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
else start();
