import type { AppConfig } from '../../config/app-config';
import { CredentialCache, revocationHandle } from './credential-cache';
import type { Principal } from './principal';

const config = (ttl: number) => ({ env: { CREDENTIAL_CACHE_TTL_MS: ttl } }) as unknown as AppConfig;
const principal = (id: string, kind: Principal['kind'] = 'merchant'): Principal => ({
  kind,
  credentialId: id,
  organizationId: 'org',
  agentId: null,
  actor: kind === 'oauth' ? 'oauth:client-row-id' : 'merchant',
  grantedScopes: [],
  scopes: new Set(),
});

describe('CredentialCache', () => {
  afterEach(() => jest.useRealTimers());

  it('keeps an entry for the TTL, then forgets it', () => {
    jest.useFakeTimers({ now: 1_000_000 });
    const cache = new CredentialCache(config(5_000));
    cache.set('d1', principal('k1'));
    jest.setSystemTime(1_004_999);
    expect(cache.get('d1')?.credentialId).toBe('k1');
    jest.setSystemTime(1_005_000);
    expect(cache.get('d1')).toBeUndefined();
  });

  it("never serves a credential past its own expiry (OAuth tokens), even inside the TTL", () => {
    jest.useFakeTimers({ now: 1_000_000 });
    const cache = new CredentialCache(config(60_000));
    cache.set('d1', principal('t1', 'oauth'), 1_002_000);
    jest.setSystemTime(1_001_999);
    expect(cache.get('d1')).toBeDefined();
    jest.setSystemTime(1_002_000);
    expect(cache.get('d1')).toBeUndefined();
    cache.set('d2', principal('t2', 'oauth'), 999_999); // already expired: not stored
    expect(cache.get('d2')).toBeUndefined();
  });

  it('TTL 0 caches nothing; evict forgets at once', () => {
    const off = new CredentialCache(config(0));
    off.set('d1', principal('k1'));
    expect(off.get('d1')).toBeUndefined();
    const on = new CredentialCache(config(5_000));
    on.set('d1', principal('k1'));
    on.evict('d1');
    expect(on.get('d1')).toBeUndefined();
  });

  it('holds at most 10,000 entries, dropping the oldest first', () => {
    const cache = new CredentialCache(config(60_000));
    for (let i = 0; i <= 10_000; i++) cache.set(`d${i}`, principal(`k${i}`));
    expect(cache.get('d0')).toBeUndefined();
    expect(cache.get('d1')?.credentialId).toBe('k1');
    expect(cache.get('d10000')?.credentialId).toBe('k10000');
  });

  it('revocation handles: a key by its id, an OAuth token by its client', () => {
    expect(revocationHandle(principal('k1'))).toBe('key:k1');
    expect(revocationHandle(principal('t1', 'oauth'))).toBe('client:client-row-id');
  });
});
