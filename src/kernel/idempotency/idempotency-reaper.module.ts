import { BullModule, InjectQueue, Processor, WorkerHost } from '@nestjs/bullmq';
import { Injectable, Logger, Module, OnApplicationBootstrap } from '@nestjs/common';
import type { Queue } from 'bullmq';
import { TransactionHost, TxHost } from '../../database/transaction';
import { QueueModule } from '../../common/queue/queue.module';
import { IdempotencyRepository } from './idempotency.repository';

export const MAINTENANCE_QUEUE = 'maintenance';
const REAP_EVERY_MS = 60 * 60 * 1000;
/** Records deleted per statement (and transaction). */
export const REAP_BATCH = 5000;
/** Batches per pass at most (500k records), so one pass stays short; the next hourly pass continues. */
export const REAP_MAX_BATCHES = 100;

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

  /**
   * One pass: batches of {@link REAP_BATCH} expired records, each in its own transaction, until a
   * batch comes back short or {@link REAP_MAX_BATCHES} ran (the next pass continues): no statement
   * and no transaction grows with the backlog (DESIGN §23).
   * @returns how many records were deleted. @throws on database failure (batches before it stay deleted).
   */
  async process(): Promise<{ deleted: number }> {
    let deleted = 0;
    for (let i = 0; i < REAP_MAX_BATCHES; i++) {
      const n = await (this.txHost as TxHost).withTransaction(() => this.records.deleteExpiredBatch(REAP_BATCH));
      deleted += n;
      if (n < REAP_BATCH) break;
    }
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
