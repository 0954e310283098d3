import type { InvoicePageView } from '../../../modules/invoices/invoices.service';
import { escapeHtml as escape, renderShell } from './page-shell';

const STATE_TEXT: Record<InvoicePageView['state'], string> = {
  pay: 'Awaiting payment',
  in_escrow: 'Payment in escrow',
  closing: 'The last payment link is closing; reload in a few minutes for a new one',
  paid: 'Paid',
  void: 'Void: this invoice is no longer payable',
};

const TONE: Record<InvoicePageView['state'], string> = { pay: '', in_escrow: 'ok', closing: 'warn', paid: 'ok', void: 'bad' };

/**
 * The hosted invoice page (`{checkout_host}/invoices/{id}`, docs/architecture.md §11, §16) on the
 * shared page shell: the invoice, and while it is open the checkout that pays it (a link to its pay
 * page, or "payment in escrow" while funded…disputed). Every value is HTML-escaped; no script
 * (paying happens on the linked pay page); refreshes every 10 s while payment is pending.
 */
export function renderInvoicePage(opts: { merchant: string; view: InvoicePageView }): string {
  const { invoice, state, checkout } = opts.view;
  const lines = invoice.lineItems
    .map((l) => `<tr><td>${escape(l.description)}</td><td class="n">${l.quantity}</td><td class="n">${escape(l.unitAmount)}</td><td class="n">${escape(l.amount)}</td></tr>`)
    .join('');
  const action =
    state === 'pay' && checkout
      ? `<p><a class="button primary" data-checkout-id="${escape(checkout.id)}" href="/checkout/${escape(checkout.id)}">Pay ${escape(invoice.amount)} USDC</a></p>
<p class="muted">Your payment is held in escrow until the order is complete.</p>`
      : checkout
        ? `<p><a data-checkout-id="${escape(checkout.id)}" href="/checkout/${escape(checkout.id)}">Checkout ${escape(checkout.id)}</a>: ${escape(checkout.status)}</p>`
        : '';
  const main = `<p class="merchant">${escape(opts.merchant)}</p>
<h1>Invoice ${escape(invoice.number ?? '')}</h1>
<p>Billed to ${escape(invoice.customer.name)}${invoice.dueAt ? ` · due ${escape(invoice.dueAt.slice(0, 10))}` : ''}</p>
<p class="amount">${escape(invoice.amount)} USDC</p>
<p><span class="status" data-status="${escape(invoice.status)}" data-state="${state}" data-tone="${TONE[state]}">${escape(STATE_TEXT[state])}</span></p>
<table><caption class="muted">Line items</caption><tr><th scope="col">Item</th><th scope="col" class="n">Qty</th><th scope="col" class="n">Unit (USDC)</th><th scope="col" class="n">Amount (USDC)</th></tr>${lines}
<tr><th colspan="3">Total</th><th class="n">${escape(invoice.amount)}</th></tr></table>
${invoice.memo ? `<p>${escape(invoice.memo)}</p>` : ''}
${action}
<p class="muted">Invoice ${escape(invoice.id)} · settled by escrow</p>`;
  return renderShell({
    title: `${opts.merchant}: invoice ${invoice.number ?? ''}`,
    head: state === 'pay' || state === 'in_escrow' ? '<meta http-equiv="refresh" content="10">\n' : '',
    main,
    mainAttrs: { page: 'invoice' },
  });
}
