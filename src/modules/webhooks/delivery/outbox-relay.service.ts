import { Injectable, Logger } from '@nestjs/common';
import { v7 as uuidv7 } from 'uuid';
import { TransactionHost, TxHost } from '../../../database/transaction';
import { DeliveryJob, DeliveryQueue } from '../webhooks.queue';
import { NewDelivery, WebhooksRepository } from '../webhooks.repository';
import { WebhookMetrics } from './webhooks.metrics';

const NO_SECRET =
  'not sent: the organisation has no webhook endpoint, so there is no signing secret (PUT /api/v1/webhook-endpoints, then retry)';

/**
 * The transactional-outbox relay (DESIGN §8): turns unrelayed outbox rows into delivery rows and
 * delivery jobs. Targets per event: the organisation endpoint when it is enabled and its events
 * filter matches, and the event's own target (a checkout's `webhookUrl`), once per distinct URL.
 */
@Injectable()
export class OutboxRelayService {
  private readonly logger = new Logger('OutboxRelay');

  constructor(
    private readonly repo: WebhooksRepository,
    private readonly queue: DeliveryQueue,
    private readonly metrics: WebhookMetrics,
    private readonly txHost: TransactionHost,
  ) {}

  /**
   * Relays up to `limit` events in one transaction: claims rows `FOR UPDATE SKIP LOCKED` (so any
   * number of workers can run), inserts their deliveries and sets `relayed_at`. The caller
   * enqueues the returned jobs (job id = delivery id) with {@link enqueue} once this has
   * committed; a crash in between leaves due `pending` rows that the recovery pass enqueues.
   * @returns how many events were relayed (0 when none were waiting) and the jobs to enqueue.
   */
  async relayInTransaction(limit: number): Promise<{ count: number; jobs: DeliveryJob[] }> {
    const out = await (this.txHost as TxHost).withTransaction(async () => {
      const events = await this.repo.claimPendingEvents(limit);
      if (events.length === 0) return { count: 0, jobs: [] as DeliveryJob[] };
      const rows: NewDelivery[] = [];
      for (const ev of events) {
        const endpoint = ev.endpoint;
        const urls = new Set<string>();
        if (endpoint?.enabled && (!endpoint.events || endpoint.events.includes(ev.type))) urls.add(endpoint.url);
        if (ev.extraTargetUrl) urls.add(ev.extraTargetUrl);
        for (const url of urls) {
          rows.push({
            id: uuidv7(),
            eventId: ev.id,
            organizationId: ev.organizationId,
            eventType: ev.type,
            url,
            status: endpoint ? 'pending' : 'failed',
            lastError: endpoint ? null : NO_SECRET,
          });
        }
      }
      const inserted = await this.repo.insertDeliveriesAndMarkRelayed(rows, events.map((e) => e.id));
      return { count: events.length, jobs: inserted.filter((r) => r.status === 'pending').map((r) => ({ deliveryId: r.id, attempt: 0 })) };
    });
    if (out.count) this.metrics.relayed.inc(out.count);
    return out;
  }

  /** Enqueues relayed deliveries; a failure is logged and left to the recovery pass (the rows are committed). */
  async enqueue(jobs: DeliveryJob[]): Promise<void> {
    try {
      await this.queue.enqueue(jobs);
    } catch (err) {
      this.logger.warn({ err, deliveries: jobs.length }, 'deliveries committed but not enqueued; the recovery pass will enqueue them');
    }
  }

  /**
   * Subscribes to outbox commits (Postgres LISTEN on the outbox trigger's channel).
   * @returns a function that unsubscribes. @throws Error when the connection cannot be opened.
   */
  onNewEvents(onNotify: () => void, onError: (err: Error) => void): Promise<() => Promise<void>> {
    return this.repo.listenForOutbox(onNotify, onError);
  }
}
