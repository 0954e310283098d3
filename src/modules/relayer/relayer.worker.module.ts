import { InjectQueue, Processor, WorkerHost } from '@nestjs/bullmq';
import { Injectable, Module, OnApplicationBootstrap } from '@nestjs/common';
import type { Job, Queue } from 'bullmq';
import { RELAYER_QUEUE, RelayerJobData, RelayerJobResult } from './relayer.queue';
import { RelayerModule } from './relayer.module';
import { RelayerSender } from './relayer-sender.service';

/**
 * Sends relayer transactions one at a time (docs/architecture.md §5): concurrency 1 per worker and a
 * global concurrency of 1 on the queue, so however many workers run, the relayer key's nonces are
 * allocated and broadcast in order.
 */
@Processor(RELAYER_QUEUE, { concurrency: 1 })
export class RelayerProcessor extends WorkerHost {
  constructor(private readonly sender: RelayerSender) {
    super();
  }

  async process(job: Job<RelayerJobData>): Promise<RelayerJobResult> {
    return { txHash: await this.sender.send(job.data.relayTxId) };
  }
}

/** Sets the queue's global concurrency to 1 at worker start. */
@Injectable()
export class RelayerQueueSetup implements OnApplicationBootstrap {
  constructor(@InjectQueue(RELAYER_QUEUE) private readonly queue: Queue) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.queue.setGlobalConcurrency(1);
  }
}

/** Worker-only: the relayer queue's processor. */
@Module({
  imports: [RelayerModule],
  providers: [RelayerProcessor, RelayerQueueSetup],
})
export class RelayerWorkerModule {}
