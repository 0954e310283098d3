import { expandScopes, invalidScopes } from './scopes';

describe('scopes', () => {
  it('X:* grants read and write', () => {
    expect([...expandScopes(['escrow:*'])].sort()).toEqual(['escrow:read', 'escrow:write']);
  });
  it('write implies read, read does not imply write', () => {
    expect(expandScopes(['checkout:write']).has('checkout:read')).toBe(true);
    expect(expandScopes(['checkout:read']).has('checkout:write')).toBe(false);
  });
  it('balance:* grants only balance:read (there is no balance:write)', () => {
    expect([...expandScopes(['balance:*'])]).toEqual(['balance:read']);
    expect(invalidScopes(['balance:read', 'balance:*', 'balance:write'])).toEqual(['balance:write']);
  });
  it('agent scopes stand alone', () => {
    expect([...expandScopes(['agent:pay'])]).toEqual(['agent:pay']);
  });
  it('ignores unknown scopes and reports them as invalid', () => {
    expect(expandScopes(['admin:*', 'checkout:delete']).size).toBe(0);
    expect(invalidScopes(['checkout:read', 'admin:*', 'agent:*', 'checkout:delete'])).toEqual(['admin:*', 'agent:*', 'checkout:delete']);
  });
});
