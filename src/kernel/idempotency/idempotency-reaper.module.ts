import { BullModule, InjectQueue, Processor, WorkerHost } from '@nestjs/bullmq';
import { Injectable, Logger, Module, OnApplicationBootstrap } from '@nestjs/common';
import type { Queue } from 'bullmq';
import { TransactionHost, TxHost } from '../../database/transaction';
import { QueueModule } from '../../common/queue/queue.module';
import { IdempotencyRepository } from './idempotency.repository';

export const MAINTENANCE_QUEUE = 'maintenance';
const REAP_EVERY_MS = 60 * 60 * 1000;

/**
 * Deletes idempotency records past their TTL (docs/architecture.md §5: records live IDEMPOTENCY_TTL_HOURS).
 * Lookups already ignore expired records; this keeps the table from growing without bound.
 */
@Processor(MAINTENANCE_QUEUE, { concurrency: 1 })
export class IdempotencyReaper extends WorkerHost {
  private readonly logger = new Logger('IdempotencyReaper');

  constructor(
    private readonly records: IdempotencyRepository,
    private readonly txHost: TransactionHost,
  ) {
    super();
  }

  async process(): Promise<{ deleted: number }> {
    const deleted = await (this.txHost as TxHost).withTransaction(() => this.records.deleteExpired());
    if (deleted > 0) this.logger.log({ deleted }, 'deleted expired idempotency records');
    return { deleted };
  }
}

/** Registers the hourly reap job at worker start (upserted by id, so one schedule however many workers). */
@Injectable()
export class IdempotencyReaperScheduler implements OnApplicationBootstrap {
  constructor(@InjectQueue(MAINTENANCE_QUEUE) private readonly queue: Queue) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.queue.upsertJobScheduler('reap-idempotency', { every: REAP_EVERY_MS }, {
      name: 'reap-idempotency',
      opts: { removeOnComplete: true, removeOnFail: { count: 100 } },
    });
  }
}

/** Worker-only: the maintenance queue with the idempotency reaper. */
@Module({
  imports: [QueueModule, BullModule.registerQueue({ name: MAINTENANCE_QUEUE })],
  providers: [IdempotencyRepository, IdempotencyReaper, IdempotencyReaperScheduler],
})
export class IdempotencyReaperModule {}
