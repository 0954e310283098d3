import { DynamicModule, Module } from '@nestjs/common';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { LoggerModule } from 'nestjs-pino';
import pino from 'pino';
import { ConfigModule } from './config/config.module';
import { AppConfig } from './config/app-config';
import type { ProcessSecrets } from './config/secrets';
import { OutboxModule } from './common/outbox/outbox.module';
import { RedisModule } from './common/redis/redis.module';
import { TracingShutdown } from './common/tracing/tracing-shutdown';
import { DatabaseModule } from './database/database.module';
import { FeesModule } from './modules/fees/fees.module';

/** The request as it appears in a log line: id, method, path with query, client address. */
export function serializeRequest(req: IncomingMessage & { id?: unknown; raw?: IncomingMessage }): Record<string, unknown> {
  const raw = req.raw ?? req;
  return { id: req.id, method: raw.method, url: raw.url, remoteAddress: raw.socket?.remoteAddress };
}

/** The response as it appears in a log line: status code only. */
export function serializeResponse(res: ServerResponse & { raw?: ServerResponse }): Record<string, unknown> {
  return { statusCode: (res.raw ?? res).statusCode };
}

/**
 * Where log lines go. In production, stdout through a buffered asynchronous writer (sonic-boom,
 * 4 KiB, flushed on exit by pino), so a request does not pay a write system call; elsewhere a
 * synchronous stdout, so a test or a developer sees every line at once.
 */
function logDestination(nodeEnv: string): pino.DestinationStream {
  return nodeEnv === 'production' ? pino.destination({ dest: 1, sync: false, minLength: 4096 }) : pino.destination({ dest: 1, sync: true });
}

/**
 * What every process (api, worker, cli) shares: config, logging, Postgres, Redis, outbox, fees.
 * Import it as `CoreModule.forProcess(...)`: the process names the secrets it loads.
 */
@Module({
  imports: [
    LoggerModule.forRootAsync({
      inject: [AppConfig],
      useFactory: (config: AppConfig) => ({
        // No route: each process mounts the request log itself with app.use (src/common/request-log.ts).
        forRoutes: [],
        pinoHttp: [
          {
            level: config.env.LOG_LEVEL,
            genReqId: (req) => (req as unknown as { id?: string }).id ?? 'unknown',
            // One short line per request: no headers are logged at all, so no credential can leak into
            // logs and no per-request redaction clone is paid (docs/decisions.md, "Request logs").
            serializers: { req: serializeRequest, res: serializeResponse },
            autoLogging: { ignore: (req) => req.url?.startsWith('/health') === true || req.url === '/metrics' },
          },
          logDestination(config.env.NODE_ENV),
        ],
      }),
    }),
    DatabaseModule,
    RedisModule,
    OutboxModule,
    FeesModule,
  ],
  providers: [TracingShutdown],
  exports: [DatabaseModule, RedisModule, OutboxModule, FeesModule, LoggerModule],
})
export class CoreModule {
  /** The core modules with the configuration of `process` (which secrets it loads; docs/architecture.md §10). */
  static forProcess(process: ProcessSecrets): DynamicModule {
    return { module: CoreModule, imports: [ConfigModule.forProcess(process)], exports: [ConfigModule] };
  }
}
