import { Inject, Injectable } from '@nestjs/common';
import Redis from 'ioredis';
import { AppConfig } from '../../config/app-config';
import { AppError } from '../../common/errors/app-error';
import { REDIS } from '../../common/redis/redis.module';
import { countLines } from './redis-throttler.storage';

/** Failed authentications are counted in fixed one-minute windows per client address. */
const WINDOW_MS = 60_000;
/** A lookup in flight holds its slot at most this long (a crashed replica's slots decay). */
const PENDING_TTL_MS = 10_000;

// The allowance test every script below starts with. KEYS[1] failures, KEYS[2] lookups in flight,
// ARGV[1] the limit → `spent` (failures + pending reach the limit) and `retry` (ms to wait).
const ALLOWANCE = `
local failures = tonumber(redis.call('GET', KEYS[1]) or '0')
local pending = tonumber(redis.call('GET', KEYS[2]) or '0')
local limit = tonumber(ARGV[1])
local spent, retry = failures + pending >= limit, 0
if spent then
  retry = 1000
  if failures >= limit then retry = redis.call('PTTL', KEYS[1]) end
  if retry < 0 then retry = 1000 end
end`;

// KEYS: failures, pending. ARGV: limit, pending ttl. → {1, 0} admitted, or {0, retry-after ms}.
const RESERVE = `${ALLOWANCE}
if spent then return {0, retry} end
redis.call('INCR', KEYS[2])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return {1, 0}`;

// KEYS: failures, pending. ARGV: failed (1/0), window ms.
const SETTLE = `
if tonumber(redis.call('GET', KEYS[2]) or '0') > 0 then redis.call('DECR', KEYS[2]) end
if ARGV[1] == '1' then
  local n = redis.call('INCR', KEYS[1])
  if n == 1 or redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
end
return 1`;

// The same allowance test as RESERVE, without taking a slot (a cached credential needs no lookup),
// then the revocation marker KEYS[3] → `verdict`: 1 admitted, 2 revoked, 0 allowance spent.
const KNOWN_VERDICT = `${ALLOWANCE}
local verdict = 1
if spent then verdict = 0 elseif redis.call('EXISTS', KEYS[3]) == 1 then verdict = 2 end`;

// KEYS: failures, pending, revocation marker. ARGV: limit. → {verdict, retry-after ms}.
const CHECK_KNOWN = `${KNOWN_VERDICT}
return {verdict, retry}`;

// KEYS: failures, pending, revocation marker, rate-limit counter. ARGV: limit, window ms.
// → {verdict, retry-after ms, hits, ms to the window's end}: CHECK_KNOWN's verdict, and the request
// counted in the credential's rate-limit window whatever the verdict (the rate-limit guard's count).
const CHECK_KNOWN_AND_COUNT = `${KNOWN_VERDICT}
${countLines('KEYS[4]', 'ARGV[2]')}
return {verdict, retry, hits, ttl}`;

type Scripts = {
  pcpAuthCheckKnown(failures: string, pending: string, revoked: string, limit: number): Promise<[number, number]>;
  pcpAuthCheckKnownAndCount(failures: string, pending: string, revoked: string, counter: string, limit: number, windowMs: number): Promise<[number, number, number, number]>;
  pcpAuthReserve(failures: string, pending: string, limit: number, pendingTtl: number): Promise<[number, number]>;
  pcpAuthSettle(failures: string, pending: string, failed: '1' | '0', windowMs: number): Promise<number>;
};

/** One admitted authentication attempt; settle it once with its outcome. */
export interface AuthAttempt {
  /** Frees the attempt's slot; `failed` adds one to the address's failures of this window. */
  settle(failed: boolean): Promise<void>;
}

/**
 * Throttles failed authentication per client address before any credential lookup
 * (docs/decisions.md, "Authentication failures"): at most `AUTH_FAILURES_PER_MINUTE` failures
 * per address per fixed minute, counted in Redis for all replicas. Every lookup first takes a
 * slot (failures + lookups in flight < limit) in one atomic script, so even concurrent guesses
 * never get more than the limit of failed lookups; a lookup that succeeds gives its slot back.
 * Refused attempts answer 429 rate_limited with `Retry-After` (seconds to the window's end, or
 * 1 when only lookups in flight fill it).
 */
@Injectable()
export class AuthFailureLimiter {
  private readonly scripts: Scripts;

  constructor(
    @Inject(REDIS) redis: Redis,
    private readonly config: AppConfig,
  ) {
    if (!('pcpAuthReserve' in redis)) {
      redis.defineCommand('pcpAuthReserve', { numberOfKeys: 2, lua: RESERVE });
      redis.defineCommand('pcpAuthSettle', { numberOfKeys: 2, lua: SETTLE });
      redis.defineCommand('pcpAuthCheckKnown', { numberOfKeys: 3, lua: CHECK_KNOWN });
      redis.defineCommand('pcpAuthCheckKnownAndCount', { numberOfKeys: 4, lua: CHECK_KNOWN_AND_COUNT });
    }
    this.scripts = redis as unknown as Scripts;
  }

  /**
   * Admits one authentication attempt from `address` (the client IP as `req.ip` gives it).
   * @throws AppError 429 rate_limited with Retry-After when the address's allowance is spent.
   */
  async admit(address: string): Promise<AuthAttempt> {
    const [failures, pending] = this.keys(address);
    const limit = this.config.env.AUTH_FAILURES_PER_MINUTE;
    const [admitted, retryMs] = await this.scripts.pcpAuthReserve(failures, pending, limit, PENDING_TTL_MS);
    if (!admitted) throw this.refusal(retryMs);
    let settled = false;
    return {
      settle: async (failed) => {
        if (settled) return;
        settled = true;
        await this.scripts.pcpAuthSettle(failures, pending, failed ? '1' : '0', WINDOW_MS);
      },
    };
  }

  /**
   * For a credential the process already knows (the credential cache): applies the same
   * allowance as {@link admit} without taking a slot, and reads the credential's revocation
   * marker `revokedKey` in the same Redis round trip.
   * @returns 'known' when the cached credential may be used, 'revoked' when its marker is set
   *   (the caller must look it up again).
   * @throws AppError 429 rate_limited with Retry-After when the address's allowance is spent.
   */
  async checkKnown(address: string, revokedKey: string): Promise<'known' | 'revoked'> {
    const [failures, pending] = this.keys(address);
    const [verdict, retryMs] = await this.scripts.pcpAuthCheckKnown(failures, pending, revokedKey, this.config.env.AUTH_FAILURES_PER_MINUTE);
    if (verdict === 0) throw this.refusal(retryMs);
    return verdict === 2 ? 'revoked' : 'known';
  }

  /**
   * {@link checkKnown} and the request's count in the credential's rate-limit window
   * (`counterKey`, fixed windows of `windowMs`) in one Redis command: the REST guards' round trip
   * for a cached credential (docs/decisions.md, "The runner's cost, second pass"). The request is
   * counted whatever the verdict, as the rate-limit guard counted it beside {@link checkKnown}.
   * @returns the verdict: 'known', 'revoked' (as {@link checkKnown}) or the 429 rate_limited
   *   refusal (with Retry-After) when the address's allowance is spent; and the window's hits so
   *   far and ms left, counted whatever the verdict.
   */
  async checkKnownAndCount(
    address: string,
    revokedKey: string,
    counterKey: string,
    windowMs: number,
  ): Promise<{ verdict: 'known' | 'revoked' | AppError; hits: number; pttl: number }> {
    const [failures, pending] = this.keys(address);
    const [verdict, retryMs, hits, pttl] = await this.scripts.pcpAuthCheckKnownAndCount(failures, pending, revokedKey, counterKey, this.config.env.AUTH_FAILURES_PER_MINUTE, windowMs);
    return { verdict: verdict === 0 ? this.refusal(retryMs) : verdict === 2 ? 'revoked' : 'known', hits, pttl };
  }

  private keys(address: string): [string, string] {
    const base = `${this.config.env.REDIS_PREFIX}:authfail:{${address}}`;
    return [`${base}:f`, `${base}:p`];
  }

  private refusal(retryMs: number): AppError {
    const limit = this.config.env.AUTH_FAILURES_PER_MINUTE;
    const seconds = Math.max(1, Math.ceil(retryMs / 1000));
    return new AppError('rate_limited', 'Too many failed authentication attempts from this address; retry later', { limit, windowSeconds: WINDOW_MS / 1000 }, 429, {
      'Retry-After': String(seconds),
    });
  }
}
