import { Injectable } from '@nestjs/common';
import { OutboxRepository } from '../../common/outbox/outbox.repository';
import { NewDelivery, WebhookDeliveriesRepository } from './webhook-deliveries.repository';
import { EndpointTargeting, WebhookEndpointsRepository } from './webhook-endpoints.repository';
import type { DeliveryStatus } from './webhooks.entity';

/**
 * An outbox row claimed by the relay, with its organisation endpoint's targeting as of a share
 * lock on the endpoint row (null: no endpoint).
 */
export interface ClaimedEvent {
  id: string;
  organizationId: string;
  type: string;
  extraTargetUrl: string | null;
  endpoint: EndpointTargeting | null;
  /** W3C trace context of the transaction that wrote the event (DESIGN §20). */
  traceparent?: string | null;
}

/**
 * The outbox relay's two steps over the three tables it touches, each written by its owner
 * (docs/architecture.md "Ownership map"): the outbox's rows (`src/common/outbox`), the endpoints'
 * targeting and the deliveries (this module). Both steps run in the relay's one transaction.
 */
@Injectable()
export class EventFanOut {
  constructor(
    private readonly outbox: OutboxRepository,
    private readonly endpoints: WebhookEndpointsRepository,
    private readonly deliveries: WebhookDeliveriesRepository,
  ) {}

  /**
   * Claims up to `limit` unrelayed outbox rows, oldest first (`FOR UPDATE SKIP LOCKED`, so concurrent
   * relays take different rows), then share-locks their organisations' endpoint rows and reads the
   * targeting from them (inside a transaction): a PUT that enables the endpoint either commits first
   * (the relay sees it enabled) or waits for the relay's commit (and then releases the rows the relay
   * held). The event data is not read.
   */
  async claimPendingEvents(limit: number): Promise<ClaimedEvent[]> {
    const events = await this.outbox.claimPending(limit);
    if (events.length === 0) return [];
    const targeting = await this.endpoints.targetingForShare(events.map((e) => e.organizationId));
    return events.map((e) => ({ ...e, endpoint: targeting.get(e.organizationId) ?? null }));
  }

  /**
   * Inserts delivery rows (ignoring (event, target) pairs that exist; only `pending` rows are due) and
   * marks the events relayed (inside the claiming transaction).
   * @returns the rows actually inserted (id and status).
   */
  async insertDeliveriesAndMarkRelayed(rows: NewDelivery[], eventIds: string[]): Promise<Array<{ id: string; status: DeliveryStatus }>> {
    const inserted = await this.deliveries.insertDeliveries(rows);
    await this.outbox.markRelayed(eventIds);
    return inserted;
  }
}
