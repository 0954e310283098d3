import { BullModule, InjectQueue, Processor, WorkerHost } from '@nestjs/bullmq';
import { Injectable, Module, OnApplicationBootstrap } from '@nestjs/common';
import type { Job, Queue } from 'bullmq';
import { QueueModule } from '../../common/queue/queue.module';
import { AppConfig } from '../../config/app-config';
import { PaymentSettlement } from './payment-settlement.service';
import { AgentEscrowsModule } from '../agent-escrows/agent-escrows.module';
import { PaymentsModule } from './payments.module';

/** Repeatable payment jobs: the USDC authorization indexer and the idle-payment sweep. */
export const PAYMENTS_QUEUE = 'payments';

@Processor(PAYMENTS_QUEUE, { concurrency: 1 })
export class PaymentJobsProcessor extends WorkerHost {
  constructor(private readonly settlement: PaymentSettlement) {
    super();
  }

  async process(job: Job): Promise<unknown> {
    if (job.name === 'authorizations') return this.settlement.pollOnce();
    if (job.name === 'sweep') return { swept: await this.settlement.sweepOnce() };
    return null;
  }
}

@Injectable()
export class PaymentJobsScheduler implements OnApplicationBootstrap {
  constructor(
    @InjectQueue(PAYMENTS_QUEUE) private readonly queue: Queue,
    private readonly config: AppConfig,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const opts = { removeOnComplete: true, removeOnFail: { count: 100 } };
    await this.queue.upsertJobScheduler('authorizations', { every: this.config.env.CHAIN_POLL_MS }, { name: 'authorizations', opts });
    await this.queue.upsertJobScheduler('sweep', { every: 10_000 }, { name: 'sweep', opts });
  }
}

/** Worker-only: payment settlement jobs. */
@Module({
  imports: [PaymentsModule, AgentEscrowsModule, QueueModule, BullModule.registerQueue({ name: PAYMENTS_QUEUE })],
  providers: [PaymentJobsProcessor, PaymentJobsScheduler],
  exports: [BullModule],
})
export class PaymentsWorkerModule {}
