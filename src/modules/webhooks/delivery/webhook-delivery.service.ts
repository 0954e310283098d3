import { Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { AppConfig } from '../../../config/app-config';
import { TransactionHost, TxHost } from '../../../database/transaction';
import { DeliveryStatus, FAILING_DISABLE_AFTER_MS } from '../webhooks.entity';
import { DeliveryJob, DeliveryQueue } from '../webhooks.queue';
import { AttemptRecord, LeasedDelivery, WebhookDeliveriesRepository } from '../webhook-deliveries.repository';
import { WebhookEndpointsRepository } from '../webhook-endpoints.repository';
import { WebhookSecrets } from '../webhook-secrets.service';
import { nextRetryDelayMs } from './retry-schedule';
import { WebhookMetrics } from './webhooks.metrics';
import { WebhookSender } from './webhook-sender.service';
import { serializeEvent, signatureHeaders } from './webhook-signing';

/** What one job did: the delivery's new status, or why nothing was sent. */
export type AttemptOutcome = DeliveryStatus | 'skipped' | 'lease_lost';

/** The endpoint state an attempt needs: URL, enabled, and the sealed secrets. */
type SigningEndpoint = NonNullable<LeasedDelivery['endpoint']>;

/** How long past the HTTP timeout a lease outlives an attempt before another worker may take over. */
const LEASE_MARGIN_MS = 10_000;

/**
 * One delivery attempt (docs/architecture.md §8): lease the row for this attempt, sign the event
 * with every live secret (`webhook-id` = event id), POST it, record status / response / error /
 * URL with attempts + 1 and release the lease, then schedule the next attempt as a delayed
 * BullMQ job (schedule × WEBHOOK_RETRY_SCALE) or end `failed`. A 410 Gone from the organisation
 * endpoint, or five days in which every attempt at it failed, disables it and holds the delivery. The row is the record; a stale, duplicate or
 * racing job finds no lease and does nothing.
 */
@Injectable()
export class WebhookDeliveryService {
  private readonly logger = new Logger('WebhookDelivery');

  constructor(
    private readonly deliveries: WebhookDeliveriesRepository,
    private readonly endpoints: WebhookEndpointsRepository,
    private readonly secrets: WebhookSecrets,
    private readonly sender: WebhookSender,
    private readonly queue: DeliveryQueue,
    private readonly metrics: WebhookMetrics,
    private readonly config: AppConfig,
    private readonly txHost: TransactionHost,
  ) {}

  /**
   * Runs the attempt `job` stands for. An `endpoint` delivery goes to the endpoint as it is now
   * (URL, secrets) and is `held` instead of sent while the endpoint is disabled; a `checkout`
   * delivery goes to its fixed URL whatever the endpoint's state, signed with its secrets.
   * @throws only on infrastructure failure (Postgres or Redis down); the row then stays due and
   *   the recovery pass re-enqueues it once the lease lapses.
   */
  async attempt(job: DeliveryJob): Promise<AttemptOutcome> {
    const token = randomUUID();
    const d = await this.deliveries.lease(job.deliveryId, job.attempt, token, this.config.env.WEBHOOK_TIMEOUT_MS + LEASE_MARGIN_MS);
    if (!d) return 'skipped';
    let endpoint: SigningEndpoint | null = d.endpoint;
    if (!endpoint) {
      this.metrics.attempts.inc({ outcome: 'not_sent' });
      const ok = await this.deliveries.recordAttempt(d.id, token, {
        status: 'failed',
        url: null,
        responseStatus: null,
        responseBody: null,
        lastError: 'not sent: the organisation has no webhook endpoint, so there is no signing secret (PUT /api/v1/webhook-endpoints)',
        nextAttemptAt: null,
        attemptedAt: new Date(),
        deliveredAt: null,
      });
      return ok ? 'failed' : 'lease_lost';
    }
    if (d.target === 'endpoint' && !endpoint.enabled) {
      const held = await this.holdWhileDisabled(d.organizationId, d.id, token);
      if (held !== 'enabled') return held;
      endpoint = (await this.endpoints.findEndpoint(d.organizationId))!;
    }

    const url = d.target === 'endpoint' ? endpoint.url : d.url;
    const attemptedAt = new Date();
    const body = serializeEvent(d.event);
    const headers = signatureHeaders(this.secrets.live(d.organizationId, endpoint, attemptedAt), d.event.id, attemptedAt, body);
    const res = await this.sender.send(url, body, headers);
    const finishedAt = new Date();
    const made = d.attempts + 1;
    const outcome = res.ok ? 'success' : (res.errorClass ?? 'http');
    this.metrics.attempts.inc({ outcome });
    this.metrics.attemptSeconds.observe({ outcome }, res.durationMs / 1000);
    if (res.ok) this.metrics.eventLatency.observe((finishedAt.getTime() - d.event.createdAt.getTime()) / 1000);

    /** `stop`: no automatic retry (a 410 from a checkout URL); `held`: wait for the endpoint's re-enabling; `disabled`: this 410 disabled it. */
    const record = (stop: boolean, held: boolean, disabled: boolean): AttemptRecord => {
      const delayMs = res.ok || stop || held ? null : nextRetryDelayMs(made, this.config.env.WEBHOOK_RETRY_SCALE, d.maxAttempts, res.retryAfterSeconds);
      return {
        status: res.ok ? 'succeeded' : held ? 'held' : delayMs === null ? 'failed' : 'retrying',
        url,
        responseStatus: res.status,
        responseBody: res.bodySnippet,
        lastError: disabled ? 'HTTP 410 Gone: endpoint disabled' : res.error,
        nextAttemptAt: delayMs === null ? null : new Date(finishedAt.getTime() + delayMs),
        attemptedAt,
        deliveredAt: res.ok ? finishedAt : null,
      };
    };
    let rec: AttemptRecord;
    let recorded: boolean;
    if (!res.ok && d.target === 'endpoint') {
      // A failure at the endpoint is judged against the endpoint row as it is now, locked: a 410
      // from its current URL disables it (`gone`), so does a failure streak of five days
      // (`failing`), and while it is disabled the delivery is held for its re-enabling. A failure
      // at a URL the merchant has since replaced only schedules the retry (to the new URL).
      ({ rec, recorded } = await (this.txHost as TxHost).withTransaction(async () => {
        const now = await this.endpoints.findEndpointForUpdate(d.organizationId);
        const current = now !== null && now.url === url && now.enabled;
        const gone = current && res.status === 410;
        let failing = false;
        if (current && !gone) {
          const since = now.failingSince ?? attemptedAt;
          failing = attemptedAt.getTime() - since.getTime() >= FAILING_DISABLE_AFTER_MS;
          if (!failing && now.failingSince === null) await this.endpoints.updateEndpoint(now.id, { failingSince: since });
        }
        if (gone || failing) await this.endpoints.disableEndpointForUrl(d.organizationId, url, gone ? 'gone' : 'failing');
        const held = gone || failing || (now !== null && !now.enabled);
        const r = record(false, held, gone);
        if (failing) r.lastError = `${res.error}; endpoint disabled: every attempt failed for 5 days`;
        return { rec: r, recorded: await this.deliveries.recordAttemptInTransaction(d.id, token, r) };
      }));
    } else {
      if (res.ok && d.target === 'endpoint' && endpoint.failingSince !== null) await this.endpoints.clearFailing(d.organizationId, url);
      rec = record(res.status === 410, false, false);
      recorded = await this.deliveries.recordAttempt(d.id, token, rec);
    }
    if (!recorded) {
      this.logger.warn({ deliveryId: d.id }, 'lease lost before the attempt was recorded; another worker owns the delivery');
      return 'lease_lost';
    }
    if (rec.status === 'retrying') await this.queue.enqueue([{ deliveryId: d.id, attempt: made, delayMs: rec.nextAttemptAt!.getTime() - finishedAt.getTime() }]);
    return rec.status;
  }

  /**
   * Holds a leased `endpoint` delivery while the endpoint is disabled, deciding under a share lock
   * on the endpoint row so a concurrent PUT that enables it either commits first (then the
   * delivery is sent) or releases this delivery after it is held (docs/architecture.md §8).
   * @returns `held`, `lease_lost`, or `enabled` when the endpoint is enabled after all.
   */
  private holdWhileDisabled(organizationId: string, id: string, token: string): Promise<'held' | 'lease_lost' | 'enabled'> {
    return (this.txHost as TxHost).withTransaction(async () => {
      const now = await this.endpoints.findEndpointForShare(organizationId);
      if (now?.enabled) return 'enabled';
      return (await this.deliveries.holdLeased(id, token)) ? 'held' : 'lease_lost';
    });
  }
}
