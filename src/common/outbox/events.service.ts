import { Injectable } from '@nestjs/common';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import { createHash } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';
import { TransactionHost, TxHost } from '../../database/transaction';
import { currentTraceparent } from '../tracing/trace-context';
import { OutboxEvent } from './outbox-event.entity';
import { WebhookEvent } from './webhook-event';

/** Salt of event ids derived from their source (a fixed random UUID of ours). */
const EVENT_ID_NAMESPACE = '6f0b8c52-3f0e-4c55-9a51-2d8e3f4a7b19';

/** Last byte of a derived id by type: events of one source sort in the order they are written (released before paid). */
const TYPE_RANK: Record<WebhookEvent, number> = {
  [WebhookEvent.CheckoutFunded]: 0,
  [WebhookEvent.CheckoutAccepted]: 1,
  [WebhookEvent.CheckoutDisputed]: 2,
  [WebhookEvent.CheckoutRefunded]: 3,
  [WebhookEvent.CheckoutCancelled]: 4,
  [WebhookEvent.CheckoutReleased]: 5,
  [WebhookEvent.CheckoutPaid]: 6,
  [WebhookEvent.CheckoutFundingReversed]: 7,
  [WebhookEvent.RefundCreated]: 8,
  [WebhookEvent.RefundUpdated]: 9,
  [WebhookEvent.RefundSucceeded]: 10,
  [WebhookEvent.RefundFailed]: 11,
};

/**
 * The outbox id of an event caused by `sourceId` (for escrow chain events `<txHash>:<escrowKey>:<action>`): a
 * UUID v8 whose first 15 bytes hash the source and whose last byte is the type, so the same log
 * always yields the same `webhook-id` (receivers dedupe by it), checkout.released and checkout.paid
 * of one log get two ids, and those sort in the order written (docs/architecture.md §8).
 */
export function derivedEventId(sourceId: string, type: WebhookEvent): string {
  const b = Buffer.from(createHash('sha256').update(`${EVENT_ID_NAMESPACE}:${sourceId.toLowerCase()}`).digest().subarray(0, 16));
  b[6] = (b[6] & 0x0f) | 0x80; // version 8 (custom)
  b[8] = (b[8] & 0x3f) | 0x80; // RFC 9562 variant
  b[15] = TYPE_RANK[type];
  const hex = b.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * Writes events to the outbox inside the caller's transaction (docs/architecture.md §8,
 * transactional outbox). Emitting checkout.released also writes its legacy twin checkout.paid
 * with the same data. Each row keeps the `traceparent` of the span active here (DESIGN §20).
 */
@Injectable()
export class EventsService {
  constructor(private readonly txHost: TransactionHost) {}

  /**
   * @param object the resource as the API renders it at this moment (`data.object`).
   * @param extraTargetUrl a per-resource webhook URL (the checkout's webhookUrl), if any.
   * @param opts.sourceId what caused the event, when it can happen again (a chain log re-applied
   *   after a reorg): the id is then {@link derivedEventId} and an event already written with it is
   *   not written again (its receivers have it under that id). Else the id is a fresh UUID v7.
   * @returns the event rows newly written (one, or two for checkout.released; none when all existed).
   * @throws Error when called outside a transaction: an event must commit with its state change.
   */
  async emit(
    organizationId: string,
    type: WebhookEvent,
    object: object,
    extraTargetUrl: string | null = null,
    opts: { sourceId?: string } = {},
  ): Promise<OutboxEvent[]> {
    const txHost = this.txHost as TxHost;
    if (!txHost.isTransactionActive()) throw new Error(`event ${type} emitted outside a transaction`);
    const types = type === WebhookEvent.CheckoutReleased ? [type, WebhookEvent.CheckoutPaid] : [type];
    const traceparent = currentTraceparent();
    const rows = types.map((t) =>
      Object.assign(new OutboxEvent(), {
        id: opts.sourceId ? derivedEventId(opts.sourceId, t) : uuidv7(),
        organizationId,
        type: t,
        data: { object: JSON.parse(JSON.stringify(object)) as Record<string, unknown> },
        extraTargetUrl,
        relayedAt: null,
        traceparent,
      }),
    );
    if (!opts.sourceId) {
      await txHost.tx.getRepository(OutboxEvent).insert(rows as QueryDeepPartialEntity<OutboxEvent>[]);
      return rows;
    }
    const result = await txHost.tx
      .createQueryBuilder()
      .insert()
      .into(OutboxEvent)
      .values(rows as QueryDeepPartialEntity<OutboxEvent>[])
      .orIgnore()
      .returning(['id'])
      .execute();
    const written = new Set((result.raw as Array<{ id: string }>).map((r) => r.id));
    return rows.filter((r) => written.has(r.id));
  }
}
