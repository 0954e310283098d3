import { InjectQueue, Processor, WorkerHost } from '@nestjs/bullmq';
import { Injectable, Logger, Module, OnApplicationBootstrap } from '@nestjs/common';
import type { Job, Queue } from 'bullmq';
import { RELAYER_QUEUE, RelayerJobData, RelayerJobResult } from './relayer.queue';
import { RelayerModule } from './relayer.module';
import { AppConfig } from '../../config/app-config';
import { RelayerSender, RelayerUnderpricedError, RelayerUnfundedError, RelayerUnsureError } from './relayer-sender.service';
import { RelayerRepository } from './relayer.repository';
import { ChainAccess } from '../chain-access.service';
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
  private readonly logger = new Logger('RelayerProcessor');

  constructor(
    private readonly sender: RelayerSender,
    private readonly tender: RelayerTender,
    private readonly repo: RelayerRepository,
    private readonly chain: ChainAccess,
  ) {
    super();
  }

  async process(job: Job<RelayerJobData>): Promise<RelayerJobResult> {
    if (job.name === TEND_JOB) {
      await this.tender.tend();
      await this.sendStalled();
      return { txHash: '' };
    }
    return { txHash: await this.sender.send(job.data.relayTxId) };
  }

  /**
   * Sends the queued rows whose send the node refused (fees above RELAYER_MAX_FEE_GWEI, the relayer
   * unfunded) or whose job ended without a broadcast, oldest first, once fees or balance allow (DESIGN
   * §22 "Refused sends stay queued and are sent by the tender"; issue 29 finding 2). Runs in the queue's
   * one slot, as a send. Stops at the first row refused again (the rest would be refused for the same
   * reason); a row whose call the sender proves dead is failed by it.
   */
  private async sendStalled(): Promise<void> {
    for (const row of await this.repo.stalledQueued(this.chain.relayer.address, STALLED_AFTER_MS)) {
      try {
        await this.sender.send(row.id);
      } catch (err) {
        if (err instanceof RelayerUnderpricedError || err instanceof RelayerUnfundedError) return;
        if (err instanceof RelayerUnsureError) continue;
        this.logger.warn({ relayTxId: row.id, error: (err as Error).message }, 'queued relayer transaction not sent by the tender');
      }
    }
  }
}

/** A queued row untouched this long is the tender's to send (its own job had the time to run). */
export const STALLED_AFTER_MS = 2_000;

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
