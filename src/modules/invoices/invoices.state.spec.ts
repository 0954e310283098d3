import { AppError } from '../../common/errors/app-error';
import type { InvoiceStatus } from './invoices.entity';

const INVOICE_STATUSES: InvoiceStatus[] = ['draft', 'open', 'paid', 'void'];
import { INVOICE_ACTIONS, InvoiceAction, invoiceAfter, invoiceAfterCheckout } from './invoices.state';

describe('invoice state table', () => {
  const cases: Array<[InvoiceStatus, InvoiceAction, InvoiceStatus | 409, boolean?]> = [
    ['draft', 'edit', 'draft'],
    ['open', 'edit', 409],
    ['paid', 'edit', 409],
    ['void', 'edit', 409],
    ['draft', 'send', 'open', true],
    ['open', 'send', 'open', false],
    ['paid', 'send', 409],
    ['void', 'send', 409],
    ['draft', 'void', 'void'],
    ['open', 'void', 'void'],
    ['paid', 'void', 409],
    ['void', 'void', 409],
  ];
  it('covers every status × action', () => {
    expect(cases.length).toBe(INVOICE_STATUSES.length * Object.keys(INVOICE_ACTIONS).length);
  });
  // A rest parameter keeps the callback's arity at 0: jest would take a 4th named parameter for `done` on 3-element rows.
  it.each(cases)('%s + %s → %s', (...row) => {
    const [status, action, expected, finalise] = row;
    if (expected === 409) {
      let err: unknown;
      try {
        invoiceAfter(status, action);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(AppError);
      expect((err as AppError).status).toBe(409);
      expect((err as AppError).details).toEqual({ reason: 'invalid_state', status, allowed: [...INVOICE_ACTIONS[action]] });
    } else {
      const r = invoiceAfter(status, action);
      expect(r.next).toBe(expected);
      if (finalise !== undefined) expect(r.finalise).toBe(finalise);
    }
  });

  it('follows its checkout: released pays an open invoice; a reorged release reopens it; draft and void never move', () => {
    expect(invoiceAfterCheckout('open', null, 'c1', 'released')).toBe('paid');
    expect(invoiceAfterCheckout('open', null, 'c1', 'funded')).toBe('open');
    expect(invoiceAfterCheckout('paid', 'c1', 'c1', 'funded')).toBe('open');
    expect(invoiceAfterCheckout('paid', 'c1', 'c2', 'refunded')).toBe('paid');
    expect(invoiceAfterCheckout('void', null, 'c1', 'released')).toBe('void');
    expect(invoiceAfterCheckout('draft', null, 'c1', 'released')).toBe('draft');
  });
});
