import { Injectable } from '@nestjs/common';
import type { Principal } from '../auth/principal';
import { AppError } from '../../common/errors/app-error';
import { RedisThrottlerStorage } from './redis-throttler.storage';
import { AppConfig } from '../../config/app-config';

/** Requests are counted in fixed one-minute windows. */
const WINDOW_MS = 60_000;

/** The IETF draft-ietf-httpapi-ratelimit-headers-10 fields of one counted request (`RateLimit-Policy`, `RateLimit`). */
export type RateLimitHeaders = Record<string, string>;

/**
 * The per-credential rate limit (DESIGN §4, §17), the runner's first step for every transport: one
 * count per transport request (a REST request, an MCP POST), per credential (per OAuth client for
 * `bat_` tokens, so minting tokens does not multiply it; per client address without a principal),
 * in Redis fixed windows shared by every replica. RATE_LIMIT_PER_MINUTE with a principal,
 * RATE_LIMIT_PUBLIC_PER_MINUTE without.
 */
@Injectable()
export class RateLimiter {
  constructor(
    private readonly storage: RedisThrottlerStorage,
    private readonly config: AppConfig,
  ) {}

  /**
   * Counts one request of `principal` (or of `address` when there is none).
   * @returns the headers to set on the response, whatever it turns out to be.
   * @throws AppError 429 rate_limited with `Retry-After` and the same headers, when the window is spent.
   */
  async consume(principal: Principal | undefined, address: string): Promise<RateLimitHeaders> {
    const tracker = !principal ? `ip:${address}` : principal.kind === 'oauth' ? principal.actor : `cred:${principal.credentialId}`;
    const limit = principal ? this.config.env.RATE_LIMIT_PER_MINUTE : this.config.env.RATE_LIMIT_PUBLIC_PER_MINUTE;
    const r = await this.storage.increment(`default:${tracker}`, WINDOW_MS, limit);
    const windowSeconds = WINDOW_MS / 1000;
    const headers = {
      'RateLimit-Policy': `"default";q=${limit};w=${windowSeconds}`,
      RateLimit: `"default";r=${Math.max(0, limit - r.totalHits)};t=${r.timeToExpire}`,
    };
    if (r.isBlocked) {
      throw new AppError('rate_limited', 'Too many requests; retry after the window resets', { limit, windowSeconds }, 429, {
        ...headers,
        'Retry-After': String(r.timeToBlockExpire),
      });
    }
    return headers;
  }
}
