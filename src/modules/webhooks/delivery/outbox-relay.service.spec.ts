import type { ClaimedEvent } from '../event-fan-out.service';
import { deliveriesFor } from './outbox-relay.service';

const A = 'https://a.example/hook';
const C = 'https://c.example/hook';
const ev = (endpoint: ClaimedEvent['endpoint'], extraTargetUrl: string | null = null, type = 'checkout.funded'): ClaimedEvent => ({
  id: 'e1',
  organizationId: 'o1',
  type,
  extraTargetUrl,
  endpoint,
});
const shape = (e: ClaimedEvent) => deliveriesFor(e).map((d) => [d.target, d.url, d.status]);

describe('deliveriesFor', () => {
  it('an enabled endpoint gets a pending endpoint delivery, a disabled one a held one; the checkout URL its own', () => {
    expect(shape(ev({ url: A, enabled: true, events: null }, C))).toEqual([
      ['endpoint', A, 'pending'],
      ['checkout', C, 'pending'],
    ]);
    expect(shape(ev({ url: A, enabled: false, events: null }, C))).toEqual([
      ['endpoint', A, 'held'],
      ['checkout', C, 'pending'],
    ]);
  });

  it('the events filter decides the endpoint delivery, held or not, and never the checkout one', () => {
    expect(shape(ev({ url: A, enabled: false, events: ['checkout.paid'] }, C))).toEqual([['checkout', C, 'pending']]);
    expect(shape(ev({ url: A, enabled: true, events: ['checkout.paid', 'checkout.funded'] }))).toEqual([['endpoint', A, 'pending']]);
  });

  it('a checkout URL equal to the endpoint URL gets the event once: as the endpoint delivery when enabled, the checkout one when disabled', () => {
    expect(shape(ev({ url: A, enabled: true, events: null }, A))).toEqual([['endpoint', A, 'pending']]);
    expect(shape(ev({ url: A, enabled: false, events: null }, A))).toEqual([['checkout', A, 'pending']]);
    expect(shape(ev({ url: A, enabled: true, events: ['checkout.paid'] }, A))).toEqual([['checkout', A, 'pending']]);
  });

  it('with no endpoint there is no signing secret: the checkout delivery is recorded failed, and nothing else', () => {
    const rows = deliveriesFor(ev(null, C));
    expect(rows.map((d) => [d.target, d.status])).toEqual([['checkout', 'failed']]);
    expect(rows[0].lastError).toMatch(/no signing secret/);
    expect(deliveriesFor(ev(null))).toEqual([]);
  });
});
