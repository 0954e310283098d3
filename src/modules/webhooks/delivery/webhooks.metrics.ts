import { Injectable } from '@nestjs/common';
import { Counter, Gauge, Histogram } from 'prom-client';
import { metricsRegistry } from '../../../common/metrics';
import { DeliveryQueue } from '../webhooks.queue';

let depthSource: DeliveryQueue | null = null;

function once<T>(name: string, make: () => T): T {
  return (metricsRegistry.getSingleMetric(name) as T | undefined) ?? make();
}

/**
 * Worker metrics of webhook delivery (issue 3, docs/architecture.md §1), on the process registry served at
 * `/metrics` of the worker's port:
 * - `webhook_queue_depth{state}` jobs waiting/delayed/active/prioritized/failed, read at scrape;
 * - `webhook_delivery_attempts_total{outcome}` one per attempt: success, http, redirect, timeout,
 *   dns, connect, tls, refused (SSRF), not_sent (no secret / endpoint disabled);
 * - `webhook_delivery_attempt_seconds{outcome}` HTTP round trip of an attempt;
 * - `webhook_event_delivery_latency_seconds` event createdAt → 2xx received;
 * - `webhook_outbox_events_relayed_total` outbox rows turned into deliveries.
 */
@Injectable()
export class WebhookMetrics {
  readonly attempts = once(
    'webhook_delivery_attempts_total',
    () => new Counter({ name: 'webhook_delivery_attempts_total', help: 'Webhook delivery attempts by outcome', labelNames: ['outcome'] as const, registers: [metricsRegistry] }),
  );
  readonly attemptSeconds = once(
    'webhook_delivery_attempt_seconds',
    () =>
      new Histogram({
        name: 'webhook_delivery_attempt_seconds',
        help: 'Duration of one webhook HTTP attempt by outcome',
        labelNames: ['outcome'] as const,
        buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30],
        registers: [metricsRegistry],
      }),
  );
  readonly eventLatency = once(
    'webhook_event_delivery_latency_seconds',
    () =>
      new Histogram({
        name: 'webhook_event_delivery_latency_seconds',
        help: 'Time from event creation to a 2xx from the receiver',
        buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 60, 300, 3600, 86400],
        registers: [metricsRegistry],
      }),
  );
  readonly relayed = once(
    'webhook_outbox_events_relayed_total',
    () => new Counter({ name: 'webhook_outbox_events_relayed_total', help: 'Outbox events relayed into webhook deliveries', registers: [metricsRegistry] }),
  );

  constructor(queue: DeliveryQueue) {
    depthSource = queue;
    once(
      'webhook_queue_depth',
      () =>
        new Gauge({
          name: 'webhook_queue_depth',
          help: 'Jobs in the webhook delivery queue by state',
          labelNames: ['state'] as const,
          registers: [metricsRegistry],
          async collect() {
            if (!depthSource) return;
            const counts = await depthSource.counts().catch(() => null);
            if (counts) for (const [state, n] of Object.entries(counts)) this.set({ state }, n);
          },
        }),
    );
  }
}
