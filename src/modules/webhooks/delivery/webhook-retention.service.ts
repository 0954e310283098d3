import { Injectable } from '@nestjs/common';
import { WebhooksRepository } from '../webhooks.repository';

/** How long events and their deliveries are kept (docs/decisions.md: 30 days, as Stripe's events). */
export const RETENTION_DAYS = 30;
/** Events deleted per statement. */
const BATCH = 5000;
/** Statements per pass at most, so one pass stays short; the next pass continues. */
const MAX_BATCHES = 100;
/** The cluster-wide advisory lock key of the pass. */
export const RETENTION_LOCK_KEY = 'webhooks:retention';

/**
 * The 30-day retention pass over events and webhook deliveries (docs/decisions.md): deletes
 * events older than {@link RETENTION_DAYS} that were relayed and have no delivery in flight
 * (`pending`, `retrying`), with their deliveries. `held` deliveries that old go too: re-enabling
 * an endpoint sends the last 30 days. Runs under a cluster-wide `pg_try_advisory_lock`, so of
 * several worker replicas one prunes and the others skip the pass.
 */
@Injectable()
export class WebhookRetentionService {
  constructor(private readonly repo: WebhooksRepository) {}

  /**
   * One pass. @returns what was deleted, or `ran: false` when another replica holds the lock.
   * @throws on database failure (the lock is released with the connection).
   */
  async prune(): Promise<{ ran: boolean; events: number; deliveries: number }> {
    const done = await this.repo.underAdvisoryLock(RETENTION_LOCK_KEY, async (query) => {
      const total = { events: 0, deliveries: 0 };
      for (let i = 0; i < MAX_BATCHES; i++) {
        const n = await this.repo.deleteExpiredEvents(query, RETENTION_DAYS, BATCH);
        total.events += n.events;
        total.deliveries += n.deliveries;
        if (n.events < BATCH) break;
      }
      return total;
    });
    return done ? { ran: true, ...done } : { ran: false, events: 0, deliveries: 0 };
  }
}
