import type { CheckoutSessionDto } from '../checkout/dto/checkout-session.dto';
import type { CheckoutFundingDto } from '../escrow/dto/escrow.dto';

const escape = (s: string) => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

const STATUS_TEXT: Record<string, string> = {
  open: 'Awaiting payment',
  funded: 'Paid into escrow',
  accepted: 'Accepted by the seller',
  delivered: 'Delivered, in inspection',
  released: 'Completed: funds released to the seller',
  disputed: 'In dispute',
  refunded: 'Refunded to the buyer',
  cancelled: 'Cancelled and refunded',
  expired: 'Expired',
};

/**
 * The hosted pay page (docs/api.md payUrl `{checkout_host}/checkout/{id}`): the order, its escrow status,
 * and for an open session the signed funding terms a wallet needs. Every value is HTML-escaped.
 * Refreshes itself every 5 s while awaiting payment.
 */
export function renderPayPage(opts: {
  merchant: string;
  session: CheckoutSessionDto;
  funding: CheckoutFundingDto | null;
  localChain: boolean;
}): string {
  const { session, funding } = opts;
  const open = session.status === 'open';
  const rows = (pairs: Array<[string, string]>) =>
    pairs.map(([k, v]) => `<tr><th>${escape(k)}</th><td><code>${escape(v)}</code></td></tr>`).join('');
  const fundingBlock = funding
    ? `<section><h2>Pay ${escape(funding.amount)} USDC into escrow</h2>
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
<p>Wallets fund with <code>fundWithAuthorization</code> using these terms and the signature from
<a href="/api/v1/checkout-sessions/${escape(session.id)}/funding-terms">the funding terms</a>.</p>
${opts.localChain ? `<p class="hint">Local chain: <code>npm run cli -- demo:pay ${escape(session.id)}</code> pays from the demo buyer wallet.</p>` : ''}
</section>`
    : '';
  const redirect =
    !open && session.redirectUrl && session.status !== 'expired'
      ? `<p><a class="button" href="${escape(session.redirectUrl)}">Return to ${escape(opts.merchant)}</a></p>`
      : '';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
${open ? '<meta http-equiv="refresh" content="5">' : ''}
<title>${escape(opts.merchant)}: ${escape(session.amount)} USDC</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem;color:#1b1f24}
h1{font-size:1.4rem;margin-bottom:.2rem}.amount{font-size:2rem;font-weight:600}.status{display:inline-block;padding:.2rem .6rem;border-radius:1rem;background:#eef2f7}
table{border-collapse:collapse;width:100%;font-size:.85rem}th{text-align:left;padding:.3rem .6rem .3rem 0;white-space:nowrap;vertical-align:top}td{padding:.3rem 0;word-break:break-all}
.hint{background:#fff8e1;padding:.5rem;border-radius:.3rem}.button{display:inline-block;background:#1b5fd1;color:#fff;padding:.5rem 1rem;border-radius:.3rem;text-decoration:none}</style>
</head><body>
<p>${escape(opts.merchant)}</p>
<h1>${escape(session.description)}</h1>
<p class="amount">${escape(session.amount)} USDC</p>
<p><span class="status" data-status="${escape(session.status)}">${escape(STATUS_TEXT[session.status] ?? session.status)}</span></p>
${fundingBlock}${redirect}
<p><small>Checkout ${escape(session.id)} · settled by escrow · fee ${escape(session.fee.feeAmount)} USDC</small></p>
</body></html>`;
}
