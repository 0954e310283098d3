import { Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { AppConfig } from '../../../config/app-config';
import { TransactionHost, TxHost } from '../../../database/transaction';
import { DeliveryStatus } from '../webhooks.entity';
import { DeliveryJob, DeliveryQueue } from '../webhooks.queue';
import { AttemptRecord, WebhooksRepository } from '../webhooks.repository';
import { WebhookSecrets } from '../webhook-secrets.service';
import { nextRetryDelayMs } from './retry-schedule';
import { WebhookMetrics } from './webhooks.metrics';
import { WebhookSender } from './webhook-sender.service';
import { serializeEvent, signatureHeaders } from './webhook-signing';

/** What one job did: the delivery's new status, or why nothing was sent. */
export type AttemptOutcome = DeliveryStatus | 'skipped' | 'lease_lost';

/** How long past the HTTP timeout a lease outlives an attempt before another worker may take over. */
const LEASE_MARGIN_MS = 10_000;

/**
 * One delivery attempt (DESIGN §8): lease the row for this attempt, sign the event with every
 * live secret (`webhook-id` = event id), POST it, record status / response / error with
 * attempts + 1 and release the lease, then schedule the next attempt as a delayed BullMQ job
 * (schedule × WEBHOOK_RETRY_SCALE) or end `failed`. A 410 Gone from the organisation endpoint
 * disables it. The row is the record; a stale, duplicate or racing job finds no lease and does
 * nothing.
 */
@Injectable()
export class WebhookDeliveryService {
  private readonly logger = new Logger('WebhookDelivery');

  constructor(
    private readonly repo: WebhooksRepository,
    private readonly secrets: WebhookSecrets,
    private readonly sender: WebhookSender,
    private readonly queue: DeliveryQueue,
    private readonly metrics: WebhookMetrics,
    private readonly config: AppConfig,
    private readonly txHost: TransactionHost,
  ) {}

  /**
   * Runs the attempt `job` stands for.
   * @throws only on infrastructure failure (Postgres or Redis down); the row then stays due and
   *   the recovery pass re-enqueues it once the lease lapses.
   */
  async attempt(job: DeliveryJob): Promise<AttemptOutcome> {
    const token = randomUUID();
    const d = await this.repo.lease(job.deliveryId, job.attempt, token, this.config.env.WEBHOOK_TIMEOUT_MS + LEASE_MARGIN_MS);
    if (!d) return 'skipped';
    const attemptedAt = new Date();
    const refusal = !d.endpoint
      ? 'not sent: the organisation has no webhook endpoint, so there is no signing secret (PUT /api/v1/webhook-endpoints)'
      : d.endpoint.url === d.url && !d.endpoint.enabled
        ? `not sent: the webhook endpoint is disabled (${d.endpoint.disabledReason ?? 'disabled'})`
        : null;
    if (refusal || !d.endpoint) {
      this.metrics.attempts.inc({ outcome: 'not_sent' });
      const ok = await this.repo.recordAttempt(d.id, token, {
        status: 'failed',
        responseStatus: null,
        responseBody: null,
        lastError: refusal,
        nextAttemptAt: null,
        attemptedAt,
        deliveredAt: null,
      });
      return ok ? 'failed' : 'lease_lost';
    }

    const body = serializeEvent(d.event);
    const headers = signatureHeaders(this.secrets.live(d.organizationId, d.endpoint, attemptedAt), d.event.id, attemptedAt, body);
    const res = await this.sender.send(d.url, body, headers);
    const finishedAt = new Date();
    const made = d.attempts + 1;
    const gone = res.status === 410;
    const delayMs = res.ok || gone ? null : nextRetryDelayMs(made, this.config.env.WEBHOOK_RETRY_SCALE, d.maxAttempts, res.retryAfterSeconds);
    const status: DeliveryStatus = res.ok ? 'succeeded' : delayMs === null ? 'failed' : 'retrying';
    const outcome = res.ok ? 'success' : res.errorClass ?? 'http';
    this.metrics.attempts.inc({ outcome });
    this.metrics.attemptSeconds.observe({ outcome }, res.durationMs / 1000);
    if (res.ok) this.metrics.eventLatency.observe((finishedAt.getTime() - d.event.createdAt.getTime()) / 1000);

    const rec: AttemptRecord = {
      status,
      responseStatus: res.status,
      responseBody: res.bodySnippet,
      lastError: gone ? 'HTTP 410 Gone: endpoint disabled' : res.error,
      nextAttemptAt: delayMs === null ? null : new Date(finishedAt.getTime() + delayMs),
      attemptedAt,
      deliveredAt: res.ok ? finishedAt : null,
    };
    const disables = gone && d.endpoint.url === d.url;
    const recorded = disables
      ? await (this.txHost as TxHost).withTransaction(async () => {
          const ok = await this.repo.recordAttemptInTransaction(d.id, token, rec);
          if (ok) await this.repo.disableEndpointForUrl(d.organizationId, d.url, 'gone');
          return ok;
        })
      : await this.repo.recordAttempt(d.id, token, rec);
    if (!recorded) {
      this.logger.warn({ deliveryId: d.id }, 'lease lost before the attempt was recorded; another worker owns the delivery');
      return 'lease_lost';
    }
    if (status === 'retrying') await this.queue.enqueue([{ deliveryId: d.id, attempt: made, delayMs: delayMs! }]);
    return status;
  }
}
