import { InjectQueue, Processor, WorkerHost } from '@nestjs/bullmq';
import { Injectable, Logger, Module, OnApplicationBootstrap } from '@nestjs/common';
import { BullModule } from '@nestjs/bullmq';
import type { Job, Queue } from 'bullmq';
import { Counter, Gauge } from 'prom-client';
import { AppConfig } from '../../config/app-config';
import { QueueModule } from '../../common/queue/queue.module';
import { metricsRegistry } from '../health/metrics';
import { EscrowIndexer } from './escrow-indexer.service';
import { EscrowModule } from './escrow.module';

/** The worker's chain queue: repeatable jobs for the indexer and the escrow schedules (DESIGN §7). */
export const CHAIN_QUEUE = 'chain';
export type ChainJobName = 'index' | 'auto-release' | 'expire-checkouts';

const indexedBlock = new Gauge({ name: 'chain_indexer_block', help: 'Last block the escrow indexer applied', registers: [metricsRegistry] });
const chainEvents = new Counter({ name: 'chain_indexer_events_total', help: 'Escrow logs read, by outcome', labelNames: ['outcome'] as const, registers: [metricsRegistry] });
const reorgs = new Counter({ name: 'chain_reorgs_total', help: 'Reorgs of already-processed blocks detected', registers: [metricsRegistry] });

/**
 * Runs the chain jobs one at a time per worker (concurrency 1); BullMQ's job schedulers make each
 * repeatable job run on one worker at a time however many workers there are.
 */
@Processor(CHAIN_QUEUE, { concurrency: 1 })
export class EscrowJobsProcessor extends WorkerHost {
  private readonly logger = new Logger('ChainJobs');

  constructor(private readonly indexer: EscrowIndexer) {
    super();
  }

  async process(job: Job): Promise<unknown> {
    switch (job.name as ChainJobName) {
      case 'index': {
        const r = await this.indexer.pollOnce();
        indexedBlock.set(r.toBlock);
        chainEvents.inc({ outcome: 'applied' }, r.applied);
        chainEvents.inc({ outcome: 'duplicate' }, r.events - r.applied);
        if (r.reorgForkBlock !== undefined) reorgs.inc();
        return r;
      }
      case 'auto-release':
        return { released: await this.indexer.autoReleaseDue() };
      case 'expire-checkouts':
        return { expired: await this.indexer.expireCheckouts() };
      default:
        this.logger.warn({ name: job.name }, 'unknown chain job');
        return null;
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
