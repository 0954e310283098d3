import { BullModule, InjectQueue, Processor, WorkerHost } from '@nestjs/bullmq';
import { Injectable, Logger, Module, OnApplicationBootstrap } from '@nestjs/common';
import type { Queue } from 'bullmq';
import { AppConfig } from '../../config/app-config';
import { QueueModule } from '../../common/queue/queue.module';
import { ReconciliationModule } from './reconciliation.module';
import { ReconcileReport, ReconciliationService } from './reconciliation.service';

export const RECONCILE_QUEUE = 'reconcile';

/** Runs one reconciliation pass per job, under the cluster-wide lock (one pass at a time across workers). */
@Processor(RECONCILE_QUEUE, { concurrency: 1 })
export class ReconciliationProcessor extends WorkerHost {
  private readonly logger = new Logger('Reconciliation');

  constructor(private readonly reconciliation: ReconciliationService) {
    super();
  }

  async process(): Promise<Pick<ReconcileReport, 'clean' | 'counts' | 'block'> | { skipped: true }> {
    try {
      const report = await this.reconciliation.runExclusive();
      return report ? { clean: report.clean, counts: report.counts, block: report.block } : { skipped: true };
    } catch (err) {
      this.logger.warn({ err: (err as Error).message }, 'reconciliation pass failed; the next one retries');
      throw err;
    }
  }
}

/** Registers the pass every RECONCILE_INTERVAL_S at worker start (upserted by id: one schedule however many workers). */
@Injectable()
export class ReconciliationScheduler implements OnApplicationBootstrap {
  constructor(
    @InjectQueue(RECONCILE_QUEUE) private readonly queue: Queue,
    private readonly config: AppConfig,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.queue.upsertJobScheduler('reconcile', { every: this.config.env.RECONCILE_INTERVAL_S * 1000 }, {
      name: 'reconcile',
      opts: { removeOnComplete: { count: 100 }, removeOnFail: { count: 100 } },
    });
  }
}

/** Worker-only: the reconcile queue, its processor and its schedule. */
@Module({
  imports: [ReconciliationModule, QueueModule, BullModule.registerQueue({ name: RECONCILE_QUEUE })],
  providers: [ReconciliationProcessor, ReconciliationScheduler],
  exports: [BullModule],
})
export class ReconciliationWorkerModule {}
