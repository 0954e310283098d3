import { Global, Inject, Injectable, Module, OnApplicationShutdown } from '@nestjs/common';
import Redis from 'ioredis';
import { AppConfig } from '../../config/app-config';

export const REDIS = Symbol('REDIS');

/** Closes the shared Redis client on shutdown. */
@Injectable()
class RedisLifecycle implements OnApplicationShutdown {
  constructor(@Inject(REDIS) private readonly redis: Redis) {}
  async onApplicationShutdown(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}

/** One shared ioredis client (rate-limit counters, health); BullMQ opens its own connections. */
@Global()
@Module({
  providers: [
    {
      provide: REDIS,
      inject: [AppConfig],
      // Auto-pipelining: commands issued in the same event-loop tick (concurrent requests) share one
      // write to the socket; order per client is kept (docs/decisions.md, "Credential cache").
      useFactory: (config: AppConfig) =>
        new Redis(config.env.REDIS_URL, { maxRetriesPerRequest: 2, lazyConnect: false, enableOfflineQueue: true, enableAutoPipelining: true }),
    },
    RedisLifecycle,
  ],
  exports: [REDIS],
})
export class RedisModule {}
