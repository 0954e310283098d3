import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { AppConfig } from '../../../config/app-config';
import { DeliveryRecoveryService } from './delivery-recovery.service';

/**
 * Runs the recovery pass at worker start and every WEBHOOK_RECOVERY_INTERVAL_MS (registered in
 * WorkerModule only), so a wiped Redis is rebuilt from Postgres (docs/architecture.md §8). A delivery is
 * checked once it has been due for one interval, so a busy queue is not probed job by job.
 */
@Injectable()
export class DeliveryRecoveryProcessor implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('DeliveryRecovery');
  private timer: NodeJS.Timeout | null = null;
  private current: Promise<void> | null = null;

  constructor(
    private readonly recovery: DeliveryRecoveryService,
    private readonly config: AppConfig,
  ) {}

  onApplicationBootstrap(): void {
    this.tick();
    this.timer = setInterval(() => this.tick(), this.config.env.WEBHOOK_RECOVERY_INTERVAL_MS);
  }

  async beforeApplicationShutdown(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.current;
  }

  private tick(): void {
    if (this.current) return;
    this.current = this.recovery
      .recoverDue(this.config.env.WEBHOOK_RECOVERY_INTERVAL_MS)
      .then((n) => {
        if (n > 0) this.logger.log({ enqueued: n }, 're-enqueued due webhook deliveries that had no job');
      })
      .catch((err: Error) => this.logger.error({ err }, 'webhook recovery pass failed'))
      .finally(() => {
        this.current = null;
      });
  }
}
