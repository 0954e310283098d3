import { DynamicModule, Module } from '@nestjs/common';
import { LoggerModule } from 'nestjs-pino';
import { ConfigModule } from './config/config.module';
import { AppConfig } from './config/app-config';
import type { ProcessSecrets } from './config/secrets';
import { OutboxModule } from './common/outbox/outbox.module';
import { RedisModule } from './common/redis/redis.module';
import { DatabaseModule } from './database/database.module';
import { FeesModule } from './modules/fees/fees.module';

/**
 * What every process (api, worker, cli) shares: config, logging, Postgres, Redis, outbox, fees.
 * Import it as `CoreModule.forProcess(...)`: the process names the secrets it loads.
 */
@Module({
  imports: [
    LoggerModule.forRootAsync({
      inject: [AppConfig],
      useFactory: (config: AppConfig) => ({
        pinoHttp: {
          level: config.env.LOG_LEVEL,
          genReqId: (req) => (req as unknown as { id?: string }).id ?? 'unknown',
          redact: ['req.headers.authorization', 'req.headers["x-api-key"]', 'req.headers.cookie', 'req.headers["idempotency-key"]'],
          autoLogging: { ignore: (req) => req.url?.startsWith('/health') === true || req.url === '/metrics' },
        },
      }),
    }),
    DatabaseModule,
    RedisModule,
    OutboxModule,
    FeesModule,
  ],
  exports: [DatabaseModule, RedisModule, OutboxModule, FeesModule, LoggerModule],
})
export class CoreModule {
  /** The core modules with the configuration of `process` (which secrets it loads; docs/architecture.md §10). */
  static forProcess(process: ProcessSecrets): DynamicModule {
    return { module: CoreModule, imports: [ConfigModule.forProcess(process)], exports: [ConfigModule] };
  }
}
