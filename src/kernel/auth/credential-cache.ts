import { Inject, Injectable } from '@nestjs/common';
import Redis from 'ioredis';
import { LRUCache } from 'lru-cache';
import { AppConfig } from '../../config/app-config';
import { REDIS } from '../../common/redis/redis.module';
import type { Principal } from './principal';

/** Most principals one api process keeps; the least recently used goes first beyond it. */
const MAX_ENTRIES = 10_000;

/**
 * The revocation handle of a principal: what one revocation switches off. An API key is revoked
 * by itself (`key:<id>`); an OAuth access token dies with its client (`client:<client_id>`).
 */
export function revocationHandle(principal: Pick<Principal, 'kind' | 'credentialId' | 'actor'>): string {
  return principal.kind === 'oauth' ? `client:${principal.actor.slice('oauth:'.length)}` : `key:${principal.credentialId}`;
}

/**
 * Revocation markers in Redis (docs/decisions.md, "Credential cache"). A revocation through the
 * service (`key:revoke`, `oauth:client:revoke`) commits in PostgreSQL, then sets
 * `{REDIS_PREFIX}:credrevoked:<handle>` for longer than any cache entry lives, so every api
 * replica's next check of a cached credential sees it at once. The marker is only a hint: the
 * database stays the record, and a lost marker (Redis flushed) is covered by the cache's TTL.
 */
@Injectable()
export class CredentialRevocations {
  constructor(
    @Inject(REDIS) private readonly redis: Redis,
    private readonly config: AppConfig,
  ) {}

  /** The Redis key of `handle`'s marker (see {@link revocationHandle}). */
  key(handle: string): string {
    return `${this.config.env.REDIS_PREFIX}:credrevoked:${handle}`;
  }

  /**
   * Marks `handle` revoked for every replica. Call after the revocation committed.
   * @throws the Redis error when the marker could not be written (the revocation itself stands;
   *   cached copies then expire within CREDENTIAL_CACHE_TTL_MS).
   */
  async mark(handle: string): Promise<void> {
    const ttlMs = Math.max(60_000, 2 * this.config.env.CREDENTIAL_CACHE_TTL_MS);
    await this.redis.set(this.key(handle), '1', 'PX', ttlMs);
  }
}

/**
 * A short per-process cache of resolved credentials, keyed by the SHA-256 digest of the secret
 * (hex), so a known credential costs no database lookup (docs/decisions.md, "Credential cache").
 * An entry lives at most `CREDENTIAL_CACHE_TTL_MS` (0 turns the cache off) and never past the
 * credential's own expiry (OAuth tokens). Whoever uses an entry must still check the credential's
 * revocation marker ({@link CredentialRevocations}); the auth guard does it in the same Redis
 * round trip as the failed-authentication check.
 */
@Injectable()
export class CredentialCache {
  private readonly entries = new LRUCache<string, { principal: Principal; until: number }>({ max: MAX_ENTRIES });

  constructor(private readonly config: AppConfig) {}

  /** The cached principal of `digest`, or undefined (absent or expired). */
  get(digest: string): Principal | undefined {
    const entry = this.entries.get(digest);
    if (!entry) return undefined;
    if (entry.until <= Date.now()) {
      this.entries.delete(digest);
      return undefined;
    }
    return entry.principal;
  }

  /** Remembers `principal` for `digest` until the TTL or `expiresAt` (ms since the epoch), whichever is first. */
  set(digest: string, principal: Principal, expiresAt?: number): void {
    const ttl = this.config.env.CREDENTIAL_CACHE_TTL_MS;
    if (ttl <= 0) return;
    const until = Math.min(Date.now() + ttl, expiresAt ?? Number.POSITIVE_INFINITY);
    if (until <= Date.now()) return;
    this.entries.set(digest, { principal, until });
  }

  /** Forgets `digest` (its credential was found revoked). */
  evict(digest: string): void {
    this.entries.delete(digest);
  }
}
