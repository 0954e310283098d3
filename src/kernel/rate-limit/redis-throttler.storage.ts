import { Inject, Injectable, Module } from '@nestjs/common';
import Redis from 'ioredis';
import { AppConfig } from '../../config/app-config';
import { REDIS } from '../../common/redis/redis.module';

/**
 * The fixed-window count as Lua lines over the counter `key` and the window `windowMs` (ms), both
 * Lua expressions such as `KEYS[1]`, `ARGV[1]`: they leave `hits` (this request's number in the
 * window) and `ttl` (ms to the window's end). The rate limit's own script and the credential
 * check's script (auth-failure.limiter.ts) both count with them.
 */
export function countLines(key: string, windowMs: string): string {
  return `local hits = redis.call('INCR', ${key})
if hits == 1 then redis.call('PEXPIRE', ${key}, ${windowMs}) end
local ttl = redis.call('PTTL', ${key})
if ttl < 0 then redis.call('PEXPIRE', ${key}, ${windowMs}); ttl = tonumber(${windowMs}) end`;
}

/** KEYS[1] the counter, ARGV[1] the window in ms → {hits, ms to the window's end}. */
const COUNT = `${countLines('KEYS[1]', 'ARGV[1]')}
return {hits, ttl}`;

/**
 * Fixed-window counters in Redis shared by every api replica (docs/architecture.md §1: nothing in
 * process memory another replica needs). The script is sent once and then run by its SHA (ioredis
 * defineCommand → EVALSHA).
 */
@Injectable()
export class RedisThrottlerStorage {
  constructor(
    @Inject(REDIS) private readonly redis: Redis,
    private readonly config: AppConfig,
  ) {
    if (!('pcpRateLimit' in redis)) redis.defineCommand('pcpRateLimit', { numberOfKeys: 1, lua: COUNT });
  }

  /** The Redis key of counter `name` (under REDIS_PREFIX). */
  key(name: string): string {
    return `${this.config.env.REDIS_PREFIX}:rl:${name}`;
  }

  /** Counts one hit on the counter at `key` (from {@link key}) in a window of `windowMs`: the hits so far and the ms left. */
  async count(key: string, windowMs: number): Promise<{ hits: number; pttl: number }> {
    const [hits, pttl] = await (this.redis as unknown as { pcpRateLimit(key: string, ttl: number): Promise<[number, number]> }).pcpRateLimit(key, windowMs);
    return { hits, pttl };
  }
}

@Module({ providers: [RedisThrottlerStorage], exports: [RedisThrottlerStorage] })
export class RateLimitStorageModule {}
