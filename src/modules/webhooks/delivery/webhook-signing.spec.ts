import { Webhook } from 'standardwebhooks';
import { generateWebhookSecret, serializeEvent, signatureHeaders } from './webhook-signing';

const event = { id: '0193a0f2-5b1c-7cc4-9d7e-1f2a3b4c5d6e', type: 'checkout.funded', createdAt: new Date('2026-01-02T03:04:05.678Z'), data: { object: { id: 'c1', amount: '12.50' } } };

describe('webhook signing', () => {
  it('makes whsec_ secrets of 32 random bytes', () => {
    const s = generateWebhookSecret();
    expect(s).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    expect(Buffer.from(s.slice(6), 'base64')).toHaveLength(32);
    expect(generateWebhookSecret()).not.toBe(s);
  });

  it('serialises {id, type, createdAt, data: {object}}', () => {
    expect(JSON.parse(serializeEvent(event))).toEqual({ ...event, createdAt: '2026-01-02T03:04:05.678Z' });
  });

  it('signs so that the standardwebhooks library verifies, and rejects a changed byte or a 301 s old timestamp', () => {
    const secret = generateWebhookSecret();
    const body = serializeEvent(event);
    const headers = signatureHeaders([secret], event.id, new Date(), body);
    expect(headers['webhook-id']).toBe(event.id);
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
    expect(() => new Webhook(secret).verify(body.replace('12.50', '12.51'), headers)).toThrow(/signature/i);
    expect(() => new Webhook(generateWebhookSecret()).verify(body, headers)).toThrow(/signature/i);
    const old = signatureHeaders([secret], event.id, new Date(Date.now() - 301_000), body);
    expect(() => new Webhook(secret).verify(body, old)).toThrow(/too old/);
  });

  it('during a rotation sends two v1 signatures, each verifying with its own secret', () => {
    const [oldSecret, newSecret] = [generateWebhookSecret(), generateWebhookSecret()];
    const body = serializeEvent(event);
    const headers = signatureHeaders([newSecret, oldSecret], event.id, new Date(), body);
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    expect(() => new Webhook(oldSecret).verify(body, headers)).not.toThrow();
    expect(() => new Webhook(newSecret).verify(body, headers)).not.toThrow();
  });

  it('refuses to sign without a secret', () => {
    expect(() => signatureHeaders([], 'x', new Date(), '{}')).toThrow(/secret/);
  });
});
