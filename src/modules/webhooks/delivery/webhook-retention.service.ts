import { Injectable } from '@nestjs/common';
import { OutboxRepository } from '../../../common/outbox/outbox.repository';
import { ClusterLock } from '../../../database/cluster-lock';
import { TransactionHost, TxHost } from '../../../database/transaction';
import { WebhookDeliveriesRepository } from '../webhook-deliveries.repository';

/** How long events and their deliveries are kept (docs/decisions.md: 30 days, as Stripe's events). */
export const RETENTION_DAYS = 30;
/** Events looked at per batch (one short transaction each). */
const BATCH = 5000;
/** Batches per pass at most, so one pass stays short; the next pass continues. */
const MAX_BATCHES = 100;
/** The cluster-wide lock name of the pass ({@link ClusterLock}). */
export const RETENTION_LOCK = 'webhooks:retention';

/**
 * The 30-day retention pass over events and webhook deliveries (docs/decisions.md): deletes
 * events older than {@link RETENTION_DAYS} that were relayed and have no delivery in flight
 * (`pending`, `retrying`), with their deliveries. `held` deliveries that old go too: re-enabling
 * an endpoint sends the last 30 days. Runs under the cluster-wide lock {@link RETENTION_LOCK}, so
 * of several worker replicas one prunes and the others skip the pass. Each table is written by its
 * owner: the events by the outbox's repository, the deliveries by this module's.
 */
@Injectable()
export class WebhookRetentionService {
  constructor(
    private readonly outbox: OutboxRepository,
    private readonly deliveries: WebhookDeliveriesRepository,
    private readonly txHost: TransactionHost,
    private readonly lock: ClusterLock,
  ) {}

  /**
   * One pass. @returns what was deleted, or `ran: false` when another replica holds the lock.
   * @throws on database failure (the lock is released first).
   */
  async prune(): Promise<{ ran: boolean; events: number; deliveries: number }> {
    const run = await this.lock.run(RETENTION_LOCK, async () => {
      const total = { events: 0, deliveries: 0 };
      let after: string | null = null;
      for (let i = 0; i < MAX_BATCHES; i++) {
        const batch = await this.batch(after);
        total.events += batch.events;
        total.deliveries += batch.deliveries;
        if (batch.scanned < BATCH) break;
        after = batch.last?.createdAt ?? null;
      }
      return total;
    });
    return run.ran ? { ran: true, ...run.value } : { ran: false, events: 0, deliveries: 0 };
  }

  /**
   * One transaction: locks a batch of expired events after `after`, keeps those with a delivery in
   * flight (the next batch starts past them), deletes the others' deliveries and then the events.
   */
  private batch(after: string | null) {
    return (this.txHost as TxHost).withTransaction(async () => {
      const expired = await this.outbox.lockExpired(RETENTION_DAYS, BATCH, after);
      const ids = expired.map((e) => e.id);
      const busy = await this.deliveries.eventsInFlight(ids);
      const doomed = ids.filter((id) => !busy.has(id));
      const deliveries = await this.deliveries.deleteForEvents(doomed);
      const events = await this.outbox.deleteEvents(doomed);
      return { scanned: expired.length, events, deliveries, last: expired.at(-1) ?? null };
    });
  }
}
