import { SecretBox } from './secret-box';

const KEY = 'k'.repeat(40);

describe('SecretBox', () => {
  it('round-trips a secret and never stores it in the clear', () => {
    const box = new SecretBox(KEY, 'webhook-secret');
    const sealed = box.seal('whsec_abc', 'org-1');
    expect(sealed).not.toContain('whsec_abc');
    expect(sealed).not.toBe(box.seal('whsec_abc', 'org-1'));
    expect(box.open(sealed, 'org-1')).toBe('whsec_abc');
  });

  it('refuses altered text, another aad, another purpose and another key', () => {
    const box = new SecretBox(KEY, 'webhook-secret');
    const sealed = box.seal('whsec_abc', 'org-1');
    const [v, iv, ct, tag] = sealed.split('.');
    const flipped = Buffer.from(ct, 'base64url');
    flipped[0] ^= 1;
    expect(() => box.open([v, iv, flipped.toString('base64url'), tag].join('.'), 'org-1')).toThrow();
    expect(() => box.open(sealed, 'org-2')).toThrow();
    expect(() => new SecretBox(KEY, 'other').open(sealed, 'org-1')).toThrow();
    expect(() => new SecretBox('x'.repeat(40), 'webhook-secret').open(sealed, 'org-1')).toThrow();
    expect(() => box.open('garbage', 'org-1')).toThrow(/format/);
  });

  it('rejects short key material', () => {
    expect(() => new SecretBox('short', 'p')).toThrow();
  });
});
