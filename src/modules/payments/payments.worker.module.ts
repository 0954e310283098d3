import { BullModule, InjectQueue, Processor, WorkerHost } from '@nestjs/bullmq';
import { Injectable, Module, OnApplicationBootstrap } from '@nestjs/common';
import type { Job, Queue } from 'bullmq';
import { QueueModule } from '../../common/queue/queue.module';
import { AppConfig } from '../../config/app-config';
import { PaymentSettlement } from './payment-settlement.service';
import { PaymentsModule } from './payments.module';

/** Repeatable payment work that may wait on the chain: the idle-payment sweep (relays, cancels). */
export const PAYMENTS_QUEUE = 'payments';

/**
 * The USDC authorization indexer, on a queue of its own: it settles every agent's payments, so it never
 * shares a slot with work that waits on the chain (docs/architecture.md §18; issue 22, finding 7).
 */
export const PAYMENT_AUTHORIZATIONS_QUEUE = 'payment-authorizations';

@Processor(PAYMENTS_QUEUE, { concurrency: 1 })
export class PaymentJobsProcessor extends WorkerHost {
  constructor(private readonly settlement: PaymentSettlement) {
    super();
  }

  async process(job: Job): Promise<unknown> {
    if (job.name === 'sweep') return { swept: await this.settlement.sweepOnce() };
    return null;
  }
}

@Processor(PAYMENT_AUTHORIZATIONS_QUEUE, { concurrency: 1 })
export class PaymentAuthorizationsProcessor extends WorkerHost {
  constructor(private readonly settlement: PaymentSettlement) {
    super();
  }

  async process(job: Job): Promise<unknown> {
    if (job.name === 'authorizations') return this.settlement.pollOnce();
    return null;
  }
}

@Injectable()
export class PaymentJobsScheduler implements OnApplicationBootstrap {
  constructor(
    @InjectQueue(PAYMENTS_QUEUE) private readonly queue: Queue,
    @InjectQueue(PAYMENT_AUTHORIZATIONS_QUEUE) private readonly authorizations: Queue,
    private readonly config: AppConfig,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const opts = { removeOnComplete: true, removeOnFail: { count: 100 } };
    // Earlier versions scheduled the indexer on the payments queue; it must not run there any more.
    await this.queue.removeJobScheduler('authorizations');
    await this.authorizations.upsertJobScheduler('authorizations', { every: this.config.env.CHAIN_POLL_MS }, { name: 'authorizations', opts });
    await this.queue.upsertJobScheduler('sweep', { every: 10_000 }, { name: 'sweep', opts });
  }
}

/** Worker-only: payment settlement jobs (the sweep, and the authorization indexer on its own queue). */
@Module({
  imports: [PaymentsModule, QueueModule, BullModule.registerQueue({ name: PAYMENTS_QUEUE }, { name: PAYMENT_AUTHORIZATIONS_QUEUE })],
  providers: [PaymentJobsProcessor, PaymentAuthorizationsProcessor, PaymentJobsScheduler],
  exports: [BullModule],
})
export class PaymentsWorkerModule {}
