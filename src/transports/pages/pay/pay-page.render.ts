import type { CheckoutSessionDto } from '../../../modules/checkout/dto/checkout-session.dto';
import type { CheckoutFundingDto } from '../../../modules/escrow/dto/escrow.dto';
import { escapeHtml as escape, MESSAGE_REGION, renderShell } from './page-shell';
import { STATUS_TEXT, STATUS_TONE as TONE } from './status-text';

/**
 * The hosted pay page (docs/api.md payUrl `{checkout_host}/checkout/{id}`, docs/architecture.md §16):
 * the order, amount, merchant, expiry and escrow status server-rendered (readable without script),
 * and the wallet panel the bundled script drives (connect, pay gaslessly, buyer actions). For an
 * open session the public funding terms are listed in a collapsed table; an expired or cancelled
 * session says so and offers nothing to pay. Every value is HTML-escaped. Without script the page
 * refreshes itself every 5 s while awaiting payment (`<noscript>` refresh).
 */
export function renderPayPage(opts: { merchant: string; session: CheckoutSessionDto; funding: CheckoutFundingDto | null; localChain: boolean }): string {
  const { session, funding } = opts;
  const open = session.status === 'open';
  const rows = (pairs: Array<[string, string]>) => pairs.map(([k, v]) => `<tr><th>${escape(k)}</th><td><code>${escape(v)}</code></td></tr>`).join('');
  const terms = funding
    ? `<details><summary>Payment details</summary>
<h2>Pay ${escape(funding.amount)} USDC into escrow</h2>
<p>Your payment is held by the escrow contract until you release it or the inspection window after delivery ends; the seller cannot take it before.</p>
<table>${rows([
        ['Network (chain id)', String(funding.chainId)],
        ['Escrow contract', funding.escrowContract],
        ['USDC token', funding.token],
        ['Escrow id', funding.terms.escrowId],
        ['Seller', funding.terms.seller],
        ['Amount (base units)', funding.terms.amount],
        ['Pay before', new Date(funding.terms.deadline * 1000).toISOString()],
      ])}</table>
${opts.localChain ? `<p class="muted">Local chain: <code>npm run cli -- demo:pay ${escape(session.id)}</code> pays from the demo buyer wallet.</p>` : ''}
</details>`
    : '';
  const closedNote =
    session.status === 'expired'
      ? '<p id="closed-note">This checkout has expired. Nothing can be paid here; ask the merchant for a new link.</p>'
      : session.status === 'cancelled'
        ? '<p id="closed-note">This checkout was cancelled and the payment returned. Nothing can be paid here.</p>'
        : '';
  const redirect =
    !open && session.redirectUrl && session.status !== 'expired'
      ? `<p><a class="button" id="return-link" href="${escape(session.redirectUrl)}">Return to ${escape(opts.merchant)}</a></p>`
      : '';
  const main = `<p class="merchant" id="merchant">${escape(opts.merchant)}</p>
<h1 id="description">${escape(session.description)}</h1>
<p class="amount" id="amount">${escape(session.amount)} USDC</p>
<p><span class="status" id="status" data-status="${escape(session.status)}" data-tone="${TONE[session.status] ?? ''}">${escape(STATUS_TEXT[session.status] ?? session.status)}</span></p>
<p id="expiry" class="muted"${open ? '' : ' hidden'}>Pay before <time id="expires-at" datetime="${escape(session.expiresAt)}">${escape(session.expiresAt.replace('T', ' ').slice(0, 16))} UTC</time><span id="countdown"></span></p>
${closedNote}
<section class="panel" id="wallet" aria-labelledby="wallet-title" hidden>
<h2 id="wallet-title">Your wallet</h2>
<p id="account" class="muted">Not connected.</p>
<div id="providers"></div>
<button type="button" class="primary" id="connect">Connect wallet</button>
<div id="actions"></div>
<div id="confirm" hidden><p id="confirm-text"></p><button type="button" class="primary" id="confirm-yes">Confirm</button><button type="button" id="confirm-no">Back</button></div>
</section>
${MESSAGE_REGION}
${redirect}
${terms}
<p class="muted">Checkout <code>${escape(session.id)}</code> · settled by escrow · fee ${escape(session.fee.feeAmount)} USDC</p>`;
  return renderShell({
    title: `${opts.merchant}: ${session.amount} USDC`,
    head: open ? '<noscript><meta http-equiv="refresh" content="5"></noscript>\n' : '',
    script: true,
    main,
    mainAttrs: { page: 'checkout', 'checkout-id': session.id, status: session.status },
  });
}
