import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { WebhookRetentionService } from './webhook-retention.service';

/** How often each worker tries the retention pass (the advisory lock lets one replica run it). */
export const RETENTION_INTERVAL_MS = 60 * 60 * 1000;

/**
 * Runs the 30-day retention pass ({@link WebhookRetentionService}) at worker start and every
 * {@link RETENTION_INTERVAL_MS} (registered in WorkerModule only).
 */
@Injectable()
export class WebhookRetentionProcessor implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('WebhookRetention');
  private timer: NodeJS.Timeout | null = null;
  private current: Promise<void> | null = null;

  constructor(private readonly retention: WebhookRetentionService) {}

  onApplicationBootstrap(): void {
    this.tick();
    this.timer = setInterval(() => this.tick(), RETENTION_INTERVAL_MS);
  }

  async beforeApplicationShutdown(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.current;
  }

  private tick(): void {
    if (this.current) return;
    this.current = this.retention
      .prune()
      .then((r) => {
        if (r.events > 0) this.logger.log(r, 'deleted events and deliveries past retention');
      })
      .catch((err: Error) => this.logger.error({ err }, 'webhook retention pass failed'))
      .finally(() => {
        this.current = null;
      });
  }
}
