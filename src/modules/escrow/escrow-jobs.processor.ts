import { InjectQueue, Processor, WorkerHost } from '@nestjs/bullmq';
import { Injectable, Logger, Module, OnApplicationBootstrap } from '@nestjs/common';
import { BullModule } from '@nestjs/bullmq';
import type { Job, Queue } from 'bullmq';
import { AppConfig } from '../../config/app-config';
import { QueueModule } from '../../common/queue/queue.module';
import { EscrowIndexer } from './escrow-indexer.service';
import type { ChainJobName } from './escrow-indexer.service';
import { EscrowModule } from './escrow.module';

/** The worker's chain queue: repeatable jobs for the indexer and the escrow schedules (docs/architecture.md §7). */
export const CHAIN_QUEUE = 'chain';
export type { ChainJobName };

/**
 * Runs the chain jobs one at a time per worker (concurrency 1). Across workers BullMQ may start
 * the next iteration of a job while the last still runs elsewhere, so each pass also takes a
 * cluster-wide lock inside {@link EscrowIndexer} and is skipped when another worker holds it.
 * A failed pass is logged and counted (`chain_job_runs_total{outcome="failed"}`) and the next
 * iteration retries it; a loop never dies silently.
 */
@Processor(CHAIN_QUEUE, { concurrency: 1 })
export class EscrowJobsProcessor extends WorkerHost {
  private readonly logger = new Logger('ChainJobs');

  constructor(private readonly indexer: EscrowIndexer) {
    super();
  }

  async process(job: Job): Promise<unknown> {
    try {
      switch (job.name as ChainJobName) {
        case 'index':
          return await this.indexer.pollOnce();
        case 'auto-release':
          return { released: await this.indexer.autoReleaseDue() };
        case 'expire-checkouts':
          return { expired: await this.indexer.expireCheckouts() };
        default:
          this.logger.warn({ name: job.name }, 'unknown chain job');
          return null;
      }
    } catch (err) {
      this.logger.error({ job: job.name, err: (err as Error).message, stack: (err as Error).stack }, 'chain job pass failed; the next iteration retries it');
      throw err;
    }
  }
}

/** Registers the repeatable chain jobs at worker start (idempotent: schedulers are upserted by id). */
@Injectable()
export class EscrowJobsScheduler implements OnApplicationBootstrap {
  constructor(
    @InjectQueue(CHAIN_QUEUE) private readonly queue: Queue,
    private readonly config: AppConfig,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const opts = { removeOnComplete: true, removeOnFail: { count: 100 } };
    await this.queue.upsertJobScheduler('index', { every: this.config.env.CHAIN_POLL_MS }, { name: 'index', opts });
    await this.queue.upsertJobScheduler('auto-release', { every: 15_000 }, { name: 'auto-release', opts });
    await this.queue.upsertJobScheduler('expire-checkouts', { every: 60_000 }, { name: 'expire-checkouts', opts });
  }
}

/** Worker-only: the chain queue, its processor and schedules. */
@Module({
  imports: [EscrowModule, QueueModule, BullModule.registerQueue({ name: CHAIN_QUEUE })],
  providers: [EscrowJobsProcessor, EscrowJobsScheduler],
  exports: [BullModule],
})
export class EscrowJobsModule {}
