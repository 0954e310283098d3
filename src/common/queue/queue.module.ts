import { BullModule } from '@nestjs/bullmq';
import { Module } from '@nestjs/common';
import { AppConfig } from '../../config/app-config';
import { bullmqTelemetry } from '../../tracing/tracing';

/**
 * The BullMQ connection every process shares (docs/architecture.md §1): `REDIS_URL`, keys under
 * `REDIS_PREFIX`. The api uses it to enqueue (manual webhook retries); the worker registers
 * its processors against the same queues. Imported once per process through the feature
 * modules that own queues. With tracing on, queues and workers carry BullMQ's telemetry, so a job
 * continues the trace that added it (DESIGN §20).
 */
@Module({
  imports: [
    BullModule.forRootAsync({
      inject: [AppConfig],
      useFactory: (config: AppConfig) => ({
        connection: { url: config.env.REDIS_URL, maxRetriesPerRequest: null },
        prefix: config.env.REDIS_PREFIX,
        telemetry: bullmqTelemetry(),
      }),
    }),
  ],
  exports: [BullModule],
})
export class QueueModule {}
