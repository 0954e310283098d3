import { Inject, Injectable, Module } from '@nestjs/common';
import Redis from 'ioredis';
import { AppConfig } from '../../config/app-config';
import { REDIS } from '../../common/redis/redis.module';

/**
 * The fixed-window count (Lua, one key: the window's counter; ARGV[1] the window in ms) →
 * {hits, ms to the window's end}. The credential check's script (auth-failure.limiter.ts) ends
 * with the same lines, so both count alike.
 */
export const COUNT_LUA = `
local hits = redis.call('INCR', KEYS[1])
if hits == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); ttl = tonumber(ARGV[1]) end
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
    if (!('pcpRateLimit' in redis)) redis.defineCommand('pcpRateLimit', { numberOfKeys: 1, lua: COUNT_LUA });
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
