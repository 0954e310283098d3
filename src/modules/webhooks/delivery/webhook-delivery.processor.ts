import { Processor, WorkerHost } from '@nestjs/bullmq';
import { BeforeApplicationShutdown } from '@nestjs/common';
import type { Job } from 'bullmq';
import { DeliveryJob, WEBHOOK_DELIVERY_QUEUE } from '../webhooks.queue';
import { AttemptOutcome, WebhookDeliveryService } from './webhook-delivery.service';

/** Concurrent attempts per worker process; attempts are I/O-bound HTTP calls. */
export const DELIVERY_CONCURRENCY = 100;

/**
 * BullMQ processor of the delivery queue (thin adapter, docs/architecture.md, Conventions 2); registered in WorkerModule
 * only. A 15 s job lock checked for stalls every 5 s lets another worker pick up the jobs of a
 * killed one within about 20 s (BullMQ defaults: 30 s / 30 s).
 */
@Processor(WEBHOOK_DELIVERY_QUEUE, { concurrency: DELIVERY_CONCURRENCY, lockDuration: 15_000, stalledInterval: 5_000 })
export class WebhookDeliveryProcessor extends WorkerHost implements BeforeApplicationShutdown {
  constructor(private readonly deliveries: WebhookDeliveryService) {
    super();
  }

  process(job: Job<DeliveryJob>): Promise<AttemptOutcome> {
    return this.deliveries.attempt(job.data);
  }

  /** Lets in-flight attempts finish and record before Postgres closes. */
  async beforeApplicationShutdown(): Promise<void> {
    await this.worker.close();
  }
}
