import { ROTATION_OVERLAP_MS } from './webhook-secrets.service';
import { rotation } from './webhooks.service';

describe('rotation', () => {
  const now = new Date('2026-01-01T12:00:00Z');

  it('outside an overlap window the replaced secret signs on for 24 h', () => {
    expect(rotation({ secretSealed: 's0', previousSecretSealed: null, previousSecretExpiresAt: null }, 's1', now)).toEqual({
      secretSealed: 's1',
      previousSecretSealed: 's0',
      previousSecretExpiresAt: new Date(now.getTime() + ROTATION_OVERLAP_MS),
      secretRotatedAt: now,
    });
    const expired = { secretSealed: 's1', previousSecretSealed: 's0', previousSecretExpiresAt: new Date(now.getTime() - 1) };
    expect(rotation(expired, 's2', now)).toMatchObject({ previousSecretSealed: 's1', previousSecretExpiresAt: new Date(now.getTime() + ROTATION_OVERLAP_MS) });
  });

  it('inside the window only the current secret is replaced: the previous one and its expiry stay', () => {
    const until = new Date(now.getTime() + 1);
    expect(rotation({ secretSealed: 's1', previousSecretSealed: 's0', previousSecretExpiresAt: until }, 's2', now)).toEqual({
      secretSealed: 's2',
      previousSecretSealed: 's0',
      previousSecretExpiresAt: until,
      secretRotatedAt: now,
    });
  });
});
