import { Inject, Injectable, Module } from '@nestjs/common';
import { ThrottlerStorage } from '@nestjs/throttler';
import type { ThrottlerStorageRecord } from '@nestjs/throttler/dist/throttler-storage-record.interface';
import Redis from 'ioredis';
import { AppConfig } from '../../config/app-config';
import { REDIS } from '../../common/redis/redis.module';

const INCREMENT = `
local hits = redis.call('INCR', KEYS[1])
if hits == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); ttl = tonumber(ARGV[1]) end
return {hits, ttl}`;

/**
 * Fixed-window counters in Redis shared by every api replica (docs/architecture.md §1: nothing in process
 * memory another replica needs). `ttl` is in milliseconds, as @nestjs/throttler passes it. The
 * script is sent once and then run by its SHA (ioredis defineCommand → EVALSHA).
 */
@Injectable()
export class RedisThrottlerStorage implements ThrottlerStorage {
  constructor(
    @Inject(REDIS) private readonly redis: Redis,
    private readonly config: AppConfig,
  ) {
    if (!('pcpRateLimit' in redis)) redis.defineCommand('pcpRateLimit', { numberOfKeys: 1, lua: INCREMENT });
  }

  async increment(key: string, ttl: number, limit: number): Promise<ThrottlerStorageRecord> {
    const run = (this.redis as unknown as { pcpRateLimit(key: string, ttl: number): Promise<[number, number]> }).pcpRateLimit.bind(this.redis);
    const [hits, pttl] = await run(`${this.config.env.REDIS_PREFIX}:rl:${key}`, ttl);
    const seconds = Math.max(1, Math.ceil(pttl / 1000));
    return { totalHits: hits, timeToExpire: seconds, isBlocked: hits > limit, timeToBlockExpire: hits > limit ? seconds : 0 };
  }
}

@Module({ providers: [RedisThrottlerStorage], exports: [RedisThrottlerStorage] })
export class RateLimitStorageModule {}
