import { Injectable, Logger } from '@nestjs/common';
import { SpanKind } from '@opentelemetry/api';
import { v7 as uuidv7 } from 'uuid';
import { contextFromTraceparent, currentTraceparent, tracer } from '../../../common/tracing/trace-context';
import { TransactionHost, TxHost } from '../../../database/transaction';
import { DeliveryJob, DeliveryQueue } from '../webhooks.queue';
import { OutboxRepository } from '../../../common/outbox/outbox.repository';
import { ClaimedEvent, EventFanOut } from '../event-fan-out.service';
import type { NewDelivery } from '../webhook-deliveries.repository';
import { WebhookMetrics } from './webhooks.metrics';

/** A delivery job with the trace context of its event, if it was traced. */
export type RelayedJob = DeliveryJob & { traceparent?: string | null };

const NO_SECRET =
  'not sent: the organisation has no webhook endpoint, so there is no signing secret (PUT /api/v1/webhook-endpoints, then retry)';

/**
 * The delivery rows of one claimed event (docs/architecture.md §8): one `endpoint` delivery when
 * the organisation endpoint's events filter takes the type — `pending`, or `held` while the
 * endpoint is disabled — and one `checkout` delivery to the event's own target (a checkout's
 * `webhookUrl`, which ignores `enabled` and the filter). A checkout URL equal to an enabled
 * endpoint's URL gets one delivery (the endpoint's); equal to a disabled endpoint's, the
 * checkout's only, so the URL never gets the event twice. With no endpoint there is no signing
 * secret: the checkout delivery is recorded `failed`.
 */
export function deliveriesFor(ev: ClaimedEvent): NewDelivery[] {
  const base = { eventId: ev.id, organizationId: ev.organizationId, eventType: ev.type };
  const endpoint = ev.endpoint;
  const out: NewDelivery[] = [];
  const wanted = endpoint !== null && (!endpoint.events || endpoint.events.includes(ev.type));
  const coincides = wanted && ev.extraTargetUrl === endpoint.url;
  if (wanted && !(coincides && !endpoint.enabled)) {
    out.push({ ...base, id: uuidv7(), target: 'endpoint', url: endpoint.url, status: endpoint.enabled ? 'pending' : 'held', lastError: null });
  }
  if (ev.extraTargetUrl && !(coincides && endpoint!.enabled)) {
    out.push({ ...base, id: uuidv7(), target: 'checkout', url: ev.extraTargetUrl, status: endpoint ? 'pending' : 'failed', lastError: endpoint ? null : NO_SECRET });
  }
  return out;
}

/**
 * The transactional-outbox relay (docs/architecture.md §8): turns unrelayed outbox rows into
 * delivery rows ({@link deliveriesFor}) and delivery jobs for the `pending` ones.
 */
@Injectable()
export class OutboxRelayService {
  private readonly logger = new Logger('OutboxRelay');

  constructor(
    private readonly fanOut: EventFanOut,
    private readonly outbox: OutboxRepository,
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
  async relayInTransaction(limit: number): Promise<{ count: number; jobs: RelayedJob[] }> {
    const claimedAt = new Date();
    const out = await (this.txHost as TxHost).withTransaction(async () => {
      const events = await this.fanOut.claimPendingEvents(limit);
      if (events.length === 0) return { count: 0, jobs: [] as RelayedJob[] };
      const rows: NewDelivery[] = [];
      for (const ev of events) rows.push(...deliveriesFor(ev));
      const inserted = await this.fanOut.insertDeliveriesAndMarkRelayed(rows, events.map((e) => e.id));
      const eventOf = new Map(rows.map((r) => [r.id, r.eventId]));
      const context = this.relaySpans(events, claimedAt);
      return {
        count: events.length,
        jobs: inserted.filter((r) => r.status === 'pending').map((r) => ({ deliveryId: r.id, attempt: 0, traceparent: context.get(eventOf.get(r.id)!) ?? null })),
      };
    });
    if (out.count) this.metrics.relayed.inc(out.count);
    return out;
  }

  /**
   * One `outbox relay` span per traced event, continuing the trace its writer stored (DESIGN §20),
   * from the claim to now; its context is what the event's delivery jobs carry.
   * @returns event id → the traceparent its jobs continue (events written untraced are absent).
   */
  private relaySpans(events: ClaimedEvent[], claimedAt: Date): Map<string, string> {
    const out = new Map<string, string>();
    for (const ev of events) {
      if (!ev.traceparent) continue;
      tracer.startActiveSpan(
        'outbox relay',
        { kind: SpanKind.CONSUMER, startTime: claimedAt, attributes: { 'webhook.event_id': ev.id, 'webhook.event_type': ev.type } },
        contextFromTraceparent(ev.traceparent),
        (span) => {
          out.set(ev.id, currentTraceparent() ?? ev.traceparent!);
          span.end();
        },
      );
    }
    return out;
  }

  /** Enqueues relayed deliveries; a failure is logged and left to the recovery pass (the rows are committed). */
  async enqueue(jobs: RelayedJob[]): Promise<void> {
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
    return this.outbox.listen(onNotify, onError);
  }
}
