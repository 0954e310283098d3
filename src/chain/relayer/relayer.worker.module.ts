import { InjectQueue, Processor, WorkerHost } from '@nestjs/bullmq';
import { Injectable, Module, OnApplicationBootstrap } from '@nestjs/common';
import type { Job, Queue } from 'bullmq';
import { RELAYER_QUEUE, RelayerJobData, RelayerJobResult } from './relayer.queue';
import { RelayerModule } from './relayer.module';
import { AppConfig } from '../../config/app-config';
import { RelayerSender } from './relayer-sender.service';
import { RelayerTender } from './relayer-tender.service';

/** Job name of the tender pass (bumps, drops, mined hashes) on the relayer queue. */
export const TEND_JOB = 'tend';

/**
 * Sends relayer transactions one at a time (docs/architecture.md §5): concurrency 1 per worker and a
 * global concurrency of 1 on the queue, so however many workers run, the relayer key's nonces are
 * allocated and broadcast in order.
 */
@Processor(RELAYER_QUEUE, { concurrency: 1 })
export class RelayerProcessor extends WorkerHost {
  constructor(
    private readonly sender: RelayerSender,
    private readonly tender: RelayerTender,
  ) {
    super();
  }

  async process(job: Job<RelayerJobData>): Promise<RelayerJobResult> {
    if (job.name === TEND_JOB) {
      await this.tender.tend();
      return { txHash: '' };
    }
    return { txHash: await this.sender.send(job.data.relayTxId) };
  }
}

/**
 * Sets the queue's global concurrency to 1 at worker start and schedules the tender pass every
 * CHAIN_POLL_MS on the same queue, so it never runs beside a send (DESIGN §18 "Relayer").
 */
@Injectable()
export class RelayerQueueSetup implements OnApplicationBootstrap {
  constructor(
    @InjectQueue(RELAYER_QUEUE) private readonly queue: Queue,
    private readonly config: AppConfig,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.queue.setGlobalConcurrency(1);
    await this.queue.upsertJobScheduler(TEND_JOB, { every: this.config.env.CHAIN_POLL_MS }, { name: TEND_JOB, opts: { removeOnComplete: true, removeOnFail: { count: 100 } } });
  }
}

/** Worker-only: the relayer queue's processor. */
@Module({
  imports: [RelayerModule],
  providers: [RelayerProcessor, RelayerQueueSetup],
})
export class RelayerWorkerModule {}
