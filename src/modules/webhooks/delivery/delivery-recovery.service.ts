import { Injectable } from '@nestjs/common';
import { ClusterLock } from '../../../database/cluster-lock';
import { DeliveryQueue } from '../webhooks.queue';
import { WebhookDeliveriesRepository } from '../webhook-deliveries.repository';

const PARALLEL = 50;
/** The cluster-wide lock name of the recovery pass ({@link ClusterLock}). */
export const RECOVERY_LOCK = 'webhooks:recovery';

/**
 * Rebuilds the queue from Postgres (docs/architecture.md §8: the delivery row is the record, the job only the
 * trigger): every `pending`/`retrying` delivery whose next attempt is due, that no worker holds,
 * and that has no live job (Redis wiped, a crash between commit and enqueue, a job lost to a
 * stalled worker) gets its job again, with the same deterministic job id. The scheduled pass
 * ({@link recoverExclusive}) runs under the cluster-wide lock {@link RECOVERY_LOCK}, so of several
 * worker replicas one runs it and the others skip.
 */
@Injectable()
export class DeliveryRecoveryService {
  constructor(
    private readonly deliveries: WebhookDeliveriesRepository,
    private readonly queue: DeliveryQueue,
    private readonly lock: ClusterLock,
  ) {}

  /**
   * {@link recoverDue} under the cluster-wide lock {@link RECOVERY_LOCK}.
   * @returns how many jobs were (re-)enqueued, or null when another process holds the lock.
   * @throws on Postgres or Redis failure (the lock is released first).
   */
  async recoverExclusive(overdueMs = 0, limit = 1000): Promise<number | null> {
    const run = await this.lock.run(RECOVERY_LOCK, () => this.recoverDue(overdueMs, limit));
    return run.ran ? run.value : null;
  }

  /**
   * @param overdueMs how long a delivery must have been due before it is checked (a live job
   *   normally runs it long before; the worker passes its recovery interval).
   * @returns how many jobs were (re-)enqueued, looking at up to `limit` due deliveries, oldest first.
   */
  async recoverDue(overdueMs = 0, limit = 1000): Promise<number> {
    const due = await this.deliveries.findDueUnleased(limit, overdueMs);
    let enqueued = 0;
    for (let i = 0; i < due.length; i += PARALLEL) {
      const done = await Promise.all(due.slice(i, i + PARALLEL).map((d) => this.queue.ensure({ deliveryId: d.id, attempt: d.attempts })));
      enqueued += done.filter(Boolean).length;
    }
    return enqueued;
  }
}
