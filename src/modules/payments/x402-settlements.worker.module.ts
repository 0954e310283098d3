import { BullModule, InjectQueue, Processor, WorkerHost } from '@nestjs/bullmq';
import { Injectable, Module, OnApplicationBootstrap } from '@nestjs/common';
import type { Job, Queue } from 'bullmq';
import { QueueModule } from '../../common/queue/queue.module';
import { PaymentsModule } from './payments.module';
import { X402Settlements } from './x402-settlements.service';

/** The x402 settlement sweep's queue (docs/architecture.md §18). */
export const X402_QUEUE = 'x402';

/** Resumes x402 settlements a crash or a timed-out request left pending, and fails expired unused ones. */
@Processor(X402_QUEUE, { concurrency: 1 })
export class X402SweepProcessor extends WorkerHost {
  constructor(private readonly settlements: X402Settlements) {
    super();
  }

  /** Runs job `sweep` ({@link X402Settlements.sweepOnce}): `{swept}`, how many settlements were looked at; other names → null. */
  async process(job: Job): Promise<unknown> {
    if (job.name === 'sweep') return { swept: await this.settlements.sweepOnce() };
    return null;
  }
}

/** Schedules the sweep every 10 s. */
@Injectable()
export class X402SweepScheduler implements OnApplicationBootstrap {
  constructor(@InjectQueue(X402_QUEUE) private readonly queue: Queue) {}

  /** Upserts the `sweep` job scheduler (idempotent across restarts and replicas). */
  async onApplicationBootstrap(): Promise<void> {
    await this.queue.upsertJobScheduler('sweep', { every: 10_000 }, { name: 'sweep', opts: { removeOnComplete: true, removeOnFail: { count: 100 } } });
  }
}

/** Worker-only: the x402 settlement sweep (docs/architecture.md §18). */
@Module({
  imports: [PaymentsModule, QueueModule, BullModule.registerQueue({ name: X402_QUEUE })],
  providers: [X402SweepProcessor, X402SweepScheduler],
  exports: [BullModule],
})
export class X402SettlementsWorkerModule {}
