import type { InvoiceDto } from './dto/invoice.dto';
import escape from 'escape-html';

/** The email of an invoice to its customer: subject, a plain part and an HTML part with the amount, due date and pay link. */
export interface InvoiceEmailContent {
  subject: string;
  text: string;
  html: string;
}

/** Renders the invoice email (docs/architecture.md §11). Every value is HTML-escaped in the HTML part. */
export function renderInvoiceEmail(invoice: InvoiceDto, merchant: string): InvoiceEmailContent {
  const due = invoice.dueAt ? invoice.dueAt.slice(0, 10) : null;
  const subject = `Invoice ${invoice.number} from ${merchant}: ${invoice.amount} USDC${due ? ` due ${due}` : ''}`;
  const lines = invoice.lineItems.map((l) => `  ${l.quantity} × ${l.description} @ ${l.unitAmount} USDC = ${l.amount} USDC`);
  const text = [
    `Hello ${invoice.customer.name},`,
    '',
    `${merchant} sent you invoice ${invoice.number} for ${invoice.amount} USDC.${due ? ` It is due on ${due}.` : ''}`,
    '',
    ...lines,
    `  Total: ${invoice.amount} USDC`,
    '',
    ...(invoice.memo ? [invoice.memo, ''] : []),
    `Pay it here: ${invoice.payUrl}`,
    '',
    'The payment is held in escrow until the order is complete.',
  ].join('\n');
  const rows = invoice.lineItems
    .map((l) => `<tr><td>${escape(l.description)}</td><td align="right">${l.quantity}</td><td align="right">${escape(l.unitAmount)}</td><td align="right">${escape(l.amount)}</td></tr>`)
    .join('');
  const html = `<!doctype html><html><body style="font-family:system-ui,sans-serif;color:#1b1f24">
<p>Hello ${escape(invoice.customer.name)},</p>
<p>${escape(merchant)} sent you invoice <strong>${escape(invoice.number ?? '')}</strong> for <strong>${escape(invoice.amount)} USDC</strong>${due ? `, due on <strong>${escape(due)}</strong>` : ''}.</p>
<table cellpadding="4" style="border-collapse:collapse"><tr><th align="left">Item</th><th>Qty</th><th>Unit (USDC)</th><th>Amount (USDC)</th></tr>${rows}
<tr><th align="left" colspan="3">Total</th><th align="right">${escape(invoice.amount)}</th></tr></table>
${invoice.memo ? `<p>${escape(invoice.memo)}</p>` : ''}
<p><a href="${escape(invoice.payUrl ?? '')}" style="display:inline-block;background:#1b5fd1;color:#fff;padding:.5rem 1rem;border-radius:.3rem;text-decoration:none">Pay ${escape(invoice.amount)} USDC</a></p>
<p style="font-size:.85rem">Or open ${escape(invoice.payUrl ?? '')}. The payment is held in escrow until the order is complete.</p>
</body></html>`;
  return { subject, text, html };
}
