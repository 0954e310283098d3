import { derivedEventId } from './events.service';
import { WebhookEvent } from './webhook-event';

const TX = '0x' + 'ab'.repeat(32);

describe('derivedEventId', () => {
  it('is a UUID determined by source and type alone (case of the tx hash ignored)', () => {
    const id = derivedEventId(`${TX}:3`, WebhookEvent.CheckoutFunded);
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(derivedEventId(`${TX.toUpperCase().replace('0X', '0x')}:3`, WebhookEvent.CheckoutFunded)).toBe(id);
  });

  it('differs by log index, by transaction and by type', () => {
    const ids = new Set([
      derivedEventId(`${TX}:3`, WebhookEvent.CheckoutReleased),
      derivedEventId(`${TX}:4`, WebhookEvent.CheckoutReleased),
      derivedEventId(`0x${'cd'.repeat(32)}:3`, WebhookEvent.CheckoutReleased),
      derivedEventId(`${TX}:3`, WebhookEvent.CheckoutPaid),
    ]);
    expect(ids.size).toBe(4);
  });

  it('sorts checkout.released before checkout.paid of one log (the relay orders one transaction by id)', () => {
    const released = derivedEventId(`${TX}:7`, WebhookEvent.CheckoutReleased);
    const paid = derivedEventId(`${TX}:7`, WebhookEvent.CheckoutPaid);
    expect(released < paid).toBe(true);
    expect(released.slice(0, -2)).toBe(paid.slice(0, -2));
  });
});
