import { Injectable } from '@nestjs/common';
import type { Principal } from '../auth/principal';
import { AppError } from '../../common/errors/app-error';
import { RedisThrottlerStorage } from './redis-throttler.storage';
import { AppConfig } from '../../config/app-config';

/** Requests are counted in fixed one-minute windows. */
export const RATE_LIMIT_WINDOW_MS = 60_000;

/** The IETF draft-ietf-httpapi-ratelimit-headers-10 fields of one counted request (`RateLimit-Policy`, `RateLimit`). */
export type RateLimitHeaders = Record<string, string>;

/** One request's count in its window: the window's limit, the request's number in it, ms to its end. */
export interface RateLimitCount {
  limit: number;
  hits: number;
  pttl: number;
}

/**
 * Where the REST auth guard leaves a cached credential's count, taken in the credential check's
 * Redis command; the rate-limit guard answers from it instead of counting again (undefined when
 * that command failed: it counts again).
 */
export const COUNTED = Symbol('rateLimitCounted');

/** A request carrying {@link COUNTED}. */
export type CountedRequest = { [COUNTED]?: Promise<RateLimitCount | undefined> };

/** Where one request is counted: its window's Redis key and the window's limit. */
export interface RateLimitCounter {
  key: string;
  limit: number;
}

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
    const counter = this.counter(principal, address);
    const r = await this.storage.count(counter.key, RATE_LIMIT_WINDOW_MS);
    return this.verdict(counter.limit, r.hits, r.pttl);
  }

  /** The counter of `principal` (or of `address` without one): its Redis key (with REDIS_PREFIX) and limit. */
  counter(principal: Principal | undefined, address: string): RateLimitCounter {
    const tracker = !principal ? `ip:${address}` : principal.kind === 'oauth' ? principal.actor : `cred:${principal.credentialId}`;
    return {
      key: this.storage.key(`default:${tracker}`),
      limit: principal ? this.config.env.RATE_LIMIT_PER_MINUTE : this.config.env.RATE_LIMIT_PUBLIC_PER_MINUTE,
    };
  }

  /**
   * The answer to a request counted `hits`-th in a window of `limit` that expires in `pttl` ms
   * (counted by {@link consume}, or by the credential check's script for a cached credential).
   * @returns the headers to set on the response.
   * @throws AppError 429 rate_limited with `Retry-After` and the same headers, past the limit.
   */
  verdict(limit: number, hits: number, pttl: number): RateLimitHeaders {
    const seconds = Math.max(1, Math.ceil(pttl / 1000));
    const windowSeconds = RATE_LIMIT_WINDOW_MS / 1000;
    const headers = {
      'RateLimit-Policy': `"default";q=${limit};w=${windowSeconds}`,
      RateLimit: `"default";r=${Math.max(0, limit - hits)};t=${seconds}`,
    };
    if (hits > limit) {
      throw new AppError('rate_limited', 'Too many requests; retry after the window resets', { limit, windowSeconds }, 429, { ...headers, 'Retry-After': String(seconds) });
    }
    return headers;
  }
}
