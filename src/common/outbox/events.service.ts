import { Injectable } from '@nestjs/common';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import { v7 as uuidv7 } from 'uuid';
import { TransactionHost, TxHost } from '../../database/transaction';
import { OutboxEvent } from './outbox-event.entity';
import { WebhookEvent } from './webhook-event';

/**
 * Writes events to the outbox inside the caller's transaction (DESIGN §8, transactional outbox).
 * Emitting checkout.released also writes its legacy twin checkout.paid with the same data.
 */
@Injectable()
export class EventsService {
  constructor(private readonly txHost: TransactionHost) {}

  /**
   * @param object the resource as the API renders it at this moment (`data.object`).
   * @param extraTargetUrl a per-resource webhook URL (the checkout's webhookUrl), if any.
   * @returns the event rows written (one, or two for checkout.released).
   * @throws Error when called outside a transaction: an event must commit with its state change.
   */
  async emit(organizationId: string, type: WebhookEvent, object: object, extraTargetUrl: string | null = null): Promise<OutboxEvent[]> {
    const txHost = this.txHost as TxHost;
    if (!txHost.isTransactionActive()) throw new Error(`event ${type} emitted outside a transaction`);
    const types = type === WebhookEvent.CheckoutReleased ? [type, WebhookEvent.CheckoutPaid] : [type];
    const rows = types.map((t) =>
      Object.assign(new OutboxEvent(), {
        id: uuidv7(),
        organizationId,
        type: t,
        data: { object: JSON.parse(JSON.stringify(object)) as Record<string, unknown> },
        extraTargetUrl,
        relayedAt: null,
      }),
    );
    await txHost.tx.getRepository(OutboxEvent).insert(rows as QueryDeepPartialEntity<OutboxEvent>[]);
    return rows;
  }
}
