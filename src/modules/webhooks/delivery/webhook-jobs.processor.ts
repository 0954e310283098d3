import { BullModule, InjectQueue, Processor, WorkerHost } from '@nestjs/bullmq';
import { BeforeApplicationShutdown, Injectable, Logger, Module, OnApplicationBootstrap } from '@nestjs/common';
import type { Job, Queue } from 'bullmq';
import { AppConfig } from '../../../config/app-config';
import { QueueModule } from '../../../common/queue/queue.module';
import { DeliveryRecoveryService } from './delivery-recovery.service';
import { WebhookDeliveryModule } from './webhook-delivery.module';
import { WebhookRetentionService } from './webhook-retention.service';

/** The worker's queue of the webhook path's scheduled passes (docs/architecture.md §8). */
export const WEBHOOK_JOBS_QUEUE = 'webhook-jobs';
/** Job (and scheduler) name of the recovery pass. */
export const RECOVER_JOB = 'recover-deliveries';
/** Job (and scheduler) name of the 30-day retention pass. */
export const RETENTION_JOB = 'webhook-retention';
/** How often the retention pass runs. */
export const RETENTION_INTERVAL_MS = 60 * 60 * 1000;

/**
 * Runs the webhook path's scheduled passes, one at a time per worker: the recovery pass
 * ({@link DeliveryRecoveryService.recoverExclusive}: re-enqueues due deliveries without a live job,
 * so a wiped Redis is rebuilt from Postgres) and the retention pass
 * ({@link WebhookRetentionService.prune}). Each pass holds a cluster-wide `pg_try_advisory_lock`
 * and is skipped when another worker holds it, so two workers never run one pass twice. A failed
 * pass is logged and the next iteration retries it.
 */
@Processor(WEBHOOK_JOBS_QUEUE, { concurrency: 1 })
export class WebhookJobsProcessor extends WorkerHost {
  private readonly logger = new Logger('WebhookJobs');

  constructor(
    private readonly recovery: DeliveryRecoveryService,
    private readonly retention: WebhookRetentionService,
    private readonly config: AppConfig,
  ) {
    super();
  }

  async process(job: Job): Promise<unknown> {
    try {
      switch (job.name) {
        case RECOVER_JOB: {
          // A delivery is checked once it has been due for one interval, so a busy queue is not probed job by job.
          const enqueued = await this.recovery.recoverExclusive(this.config.env.WEBHOOK_RECOVERY_INTERVAL_MS);
          if (enqueued) this.logger.log({ enqueued }, 're-enqueued due webhook deliveries that had no job');
          return enqueued === null ? { skipped: true } : { enqueued };
        }
        case RETENTION_JOB: {
          const r = await this.retention.prune();
          if (r.events > 0) this.logger.log(r, 'deleted events and deliveries past retention');
          return r;
        }
        default:
          this.logger.warn({ name: job.name }, 'unknown webhook job');
          return null;
      }
    } catch (err) {
      this.logger.error({ job: job.name, err: (err as Error).message }, 'webhook pass failed; the next iteration retries it');
      throw err;
    }
  }
}

/**
 * Registers the two schedulers at worker start (upserted by id: one schedule however many
 * workers; an `every` scheduler runs its first iteration at once). The recovery pass is what
 * rebuilds a wiped Redis, and a wipe takes the schedulers with it, so the worker also checks every
 * WEBHOOK_RECOVERY_INTERVAL_MS that the recovery scheduler still exists and re-registers both when
 * it is gone; the passes themselves only ever run as BullMQ jobs (docs/decisions.md).
 */
@Injectable()
export class WebhookJobsScheduler implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('WebhookJobs');
  private watchdog: NodeJS.Timeout | null = null;

  constructor(
    @InjectQueue(WEBHOOK_JOBS_QUEUE) private readonly queue: Queue,
    private readonly config: AppConfig,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    await this.register();
    this.watchdog = setInterval(() => {
      this.reRegisterIfLost().catch((err: Error) => this.logger.warn({ err: err.message }, 'webhook job schedulers check failed'));
    }, this.config.env.WEBHOOK_RECOVERY_INTERVAL_MS);
  }

  beforeApplicationShutdown(): void {
    if (this.watchdog) clearInterval(this.watchdog);
    this.watchdog = null;
  }

  private async register(): Promise<void> {
    const opts = { removeOnComplete: true, removeOnFail: { count: 100 } };
    await this.queue.upsertJobScheduler(RECOVER_JOB, { every: this.config.env.WEBHOOK_RECOVERY_INTERVAL_MS }, { name: RECOVER_JOB, opts });
    await this.queue.upsertJobScheduler(RETENTION_JOB, { every: RETENTION_INTERVAL_MS }, { name: RETENTION_JOB, opts });
  }

  private async reRegisterIfLost(): Promise<void> {
    if (await this.queue.getJobScheduler(RECOVER_JOB)) return;
    this.logger.warn('webhook job schedulers gone from Redis; registering them again');
    await this.register();
  }
}

/** Worker-only: the webhook jobs queue, its processor and its schedules. */
@Module({
  imports: [WebhookDeliveryModule, QueueModule, BullModule.registerQueue({ name: WEBHOOK_JOBS_QUEUE })],
  providers: [WebhookJobsProcessor, WebhookJobsScheduler],
  exports: [BullModule],
})
export class WebhookJobsModule {}
