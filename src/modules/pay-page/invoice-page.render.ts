import type { InvoicePageView } from '../invoices/invoices.service';

const escape = (s: string) => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

const STATE_TEXT: Record<InvoicePageView['state'], string> = {
  pay: 'Awaiting payment',
  in_escrow: 'Payment in escrow',
  closing: 'The last payment link is closing; reload in a few minutes for a new one',
  paid: 'Paid',
  void: 'Void: this invoice is no longer payable',
};

/**
 * The hosted invoice page (`{checkout_host}/invoices/{id}`, docs/architecture.md §11, §16): the
 * invoice, and while it is open the checkout that pays it (a link to its pay page, or "payment in
 * escrow" while funded…disputed). Every value is HTML-escaped; no script.
 */
export function renderInvoicePage(opts: { merchant: string; view: InvoicePageView }): string {
  const { invoice, state, checkout } = opts.view;
  const lines = invoice.lineItems
    .map((l) => `<tr><td>${escape(l.description)}</td><td class="n">${l.quantity}</td><td class="n">${escape(l.unitAmount)}</td><td class="n">${escape(l.amount)}</td></tr>`)
    .join('');
  const action =
    state === 'pay' && checkout
      ? `<p><a class="button" data-checkout-id="${escape(checkout.id)}" href="/checkout/${escape(checkout.id)}">Pay ${escape(invoice.amount)} USDC</a></p>
<p><small>Your payment is held in escrow until the order is complete.</small></p>`
      : checkout
        ? `<p><a data-checkout-id="${escape(checkout.id)}" href="/checkout/${escape(checkout.id)}">Checkout ${escape(checkout.id)}</a>: ${escape(checkout.status)}</p>`
        : '';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
${state === 'pay' || state === 'in_escrow' ? '<meta http-equiv="refresh" content="10">' : ''}
<title>${escape(opts.merchant)}: invoice ${escape(invoice.number ?? '')}</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem;color:#1b1f24}
h1{font-size:1.4rem;margin-bottom:.2rem}.amount{font-size:2rem;font-weight:600}.status{display:inline-block;padding:.2rem .6rem;border-radius:1rem;background:#eef2f7}
table{border-collapse:collapse;width:100%;font-size:.9rem}th,td{text-align:left;padding:.3rem .6rem .3rem 0}.n{text-align:right}
.button{display:inline-block;background:#1b5fd1;color:#fff;padding:.5rem 1rem;border-radius:.3rem;text-decoration:none}</style>
</head><body>
<p>${escape(opts.merchant)}</p>
<h1>Invoice ${escape(invoice.number ?? '')}</h1>
<p>Billed to ${escape(invoice.customer.name)}${invoice.dueAt ? ` · due ${escape(invoice.dueAt.slice(0, 10))}` : ''}</p>
<p class="amount">${escape(invoice.amount)} USDC</p>
<p><span class="status" data-status="${escape(invoice.status)}" data-state="${state}">${escape(STATE_TEXT[state])}</span></p>
<table><tr><th>Item</th><th class="n">Qty</th><th class="n">Unit (USDC)</th><th class="n">Amount (USDC)</th></tr>${lines}
<tr><th colspan="3">Total</th><th class="n">${escape(invoice.amount)}</th></tr></table>
${invoice.memo ? `<p>${escape(invoice.memo)}</p>` : ''}
${action}
<p><small>Invoice ${escape(invoice.id)} · settled by escrow</small></p>
</body></html>`;
}
