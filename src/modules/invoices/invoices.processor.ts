import { BullModule, InjectQueue, Processor, WorkerHost } from '@nestjs/bullmq';
import { Injectable, Module, OnApplicationBootstrap } from '@nestjs/common';
import type { Queue } from 'bullmq';
import { QueueModule } from '../../common/queue/queue.module';
import { InvoiceMailer } from './invoice-mailer.service';
import { InvoicesModule } from './invoices.module';

/** The worker's invoice queue: a repeatable job delivering pending invoice emails. */
export const INVOICES_QUEUE = 'invoices';
const DELIVER_EVERY_MS = 1000;

@Processor(INVOICES_QUEUE, { concurrency: 1 })
export class InvoiceEmailsProcessor extends WorkerHost {
  constructor(private readonly mailer: InvoiceMailer) {
    super();
  }

  process(): Promise<{ sent: number; failed: number; retrying: number }> {
    return this.mailer.deliverDue();
  }
}

/** Registers the email delivery schedule at worker start (upserted by id: one schedule however many workers). */
@Injectable()
export class InvoiceEmailsScheduler implements OnApplicationBootstrap {
  constructor(@InjectQueue(INVOICES_QUEUE) private readonly queue: Queue) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.queue.upsertJobScheduler('deliver-invoice-emails', { every: DELIVER_EVERY_MS }, {
      name: 'deliver-invoice-emails',
      opts: { removeOnComplete: true, removeOnFail: { count: 100 } },
    });
  }
}

/** Worker-only: the invoices queue, its processor and schedule. */
@Module({
  imports: [InvoicesModule, QueueModule, BullModule.registerQueue({ name: INVOICES_QUEUE })],
  providers: [InvoiceEmailsProcessor, InvoiceEmailsScheduler],
  exports: [BullModule],
})
export class InvoicesWorkerModule {}
