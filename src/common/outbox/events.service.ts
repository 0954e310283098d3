import { Injectable } from '@nestjs/common';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import { v5 as uuidv5, v7 as uuidv7 } from 'uuid';
import { TransactionHost, TxHost } from '../../database/transaction';
import { OutboxEvent } from './outbox-event.entity';
import { WebhookEvent } from './webhook-event';

/** Namespace of event ids derived from their source (UUID v5; a fixed random UUID of ours). */
const EVENT_ID_NAMESPACE = '6f0b8c52-3f0e-4c55-9a51-2d8e3f4a7b19';

/**
 * The outbox id of an event caused by `sourceId` (for chain events `<txHash>:<logIndex>`): a UUID v5
 * of source and type, so the same log always yields the same `webhook-id` (receivers dedupe by it)
 * and checkout.released and checkout.paid of one log get two ids (docs/architecture.md §8).
 */
export function derivedEventId(sourceId: string, type: WebhookEvent): string {
  return uuidv5(`${sourceId.toLowerCase()}/${type}`, EVENT_ID_NAMESPACE);
}

/**
 * Writes events to the outbox inside the caller's transaction (docs/architecture.md §8,
 * transactional outbox). Emitting checkout.released also writes its legacy twin checkout.paid
 * with the same data.
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
    const rows = types.map((t) =>
      Object.assign(new OutboxEvent(), {
        id: opts.sourceId ? derivedEventId(opts.sourceId, t) : uuidv7(),
        organizationId,
        type: t,
        data: { object: JSON.parse(JSON.stringify(object)) as Record<string, unknown> },
        extraTargetUrl,
        relayedAt: null,
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
