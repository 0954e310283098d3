import { BullModule, InjectQueue, Processor, WorkerHost } from '@nestjs/bullmq';
import { Injectable, Module, OnApplicationBootstrap } from '@nestjs/common';
import type { Job, Queue } from 'bullmq';
import { QueueModule } from '../../common/queue/queue.module';
import { AppConfig } from '../../config/app-config';
import { RefundsModule } from './refunds.module';
import { RefundsService } from './refunds.service';

/** The refund watcher's queue (DESIGN §21): settles refunds from the chain, fails expired ones, resumes their relays. */
export const REFUNDS_QUEUE = 'refunds';

@Processor(REFUNDS_QUEUE, { concurrency: 1 })
export class RefundsProcessor extends WorkerHost {
  constructor(private readonly refunds: RefundsService) {
    super();
  }

  async process(job: Job): Promise<unknown> {
    if (job.name === 'watch') return { watched: await this.refunds.watchOnce() };
    return null;
  }
}

/** Schedules the watcher (a BullMQ job scheduler, every CHAIN_POLL_MS; each pass a bounded batch). */
@Injectable()
export class RefundsScheduler implements OnApplicationBootstrap {
  constructor(
    @InjectQueue(REFUNDS_QUEUE) private readonly queue: Queue,
    private readonly config: AppConfig,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const opts = { removeOnComplete: true, removeOnFail: { count: 100 } };
    await this.queue.upsertJobScheduler('watch', { every: Math.max(this.config.env.CHAIN_POLL_MS, 1000) }, { name: 'watch', opts });
  }
}

/** Worker-only: the refund watcher. */
@Module({
  imports: [RefundsModule, QueueModule, BullModule.registerQueue({ name: REFUNDS_QUEUE })],
  providers: [RefundsProcessor, RefundsScheduler],
  exports: [BullModule],
})
export class RefundsWorkerModule {}
