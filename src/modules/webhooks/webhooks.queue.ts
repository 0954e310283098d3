import { InjectQueue } from '@nestjs/bullmq';
import { Injectable } from '@nestjs/common';
import type { JobsOptions, Queue } from 'bullmq';

/** The BullMQ queue of webhook delivery attempts (docs/architecture.md §8). */
export const WEBHOOK_DELIVERY_QUEUE = 'webhook-deliveries';
/** The one job name on that queue. */
export const DELIVER_JOB = 'deliver';

/**
 * Payload of one delivery attempt: `attempt` is the number of attempts already finished when the
 * job was made; the processor acts only while the row still has exactly that many (an
 * optimistic token, so a stale or duplicate job is a no-op).
 */
export interface DeliveryJob {
  deliveryId: string;
  attempt: number;
}

/**
 * The job id of an attempt: the delivery id for the first (docs/architecture.md §8: job id = delivery id, so a
 * relay that runs twice cannot enqueue twice), `<deliveryId>_<n>` for the attempt after n
 * finished ones (BullMQ forbids `:` in custom ids).
 */
export function deliveryJobId(job: DeliveryJob): string {
  return job.attempt === 0 ? job.deliveryId : `${job.deliveryId}_${job.attempt}`;
}

const JOB_OPTIONS: JobsOptions = {
  removeOnComplete: true,
  removeOnFail: { age: 24 * 3600, count: 1000 },
};

/**
 * Producer side of the delivery queue (the Redis I/O of this module, as the repository is the
 * Postgres I/O). Jobs are only triggers: every method is safe to repeat, because job ids are
 * deterministic and the processor re-checks the Postgres row.
 */
@Injectable()
export class DeliveryQueue {
  constructor(@InjectQueue(WEBHOOK_DELIVERY_QUEUE) readonly queue: Queue<DeliveryJob>) {}

  /**
   * Enqueues attempts now (or after `delayMs`); an existing job with the same id is left alone. A
   * job's `traceparent` (its event's trace, DESIGN §20) becomes its BullMQ telemetry context, so
   * with tracing on the attempt continues that trace; without one, the job continues the caller's.
   */
  async enqueue(jobs: Array<DeliveryJob & { delayMs?: number; traceparent?: string | null }>): Promise<void> {
    if (jobs.length === 0) return;
    await this.queue.addBulk(
      jobs.map(({ delayMs, traceparent, ...data }) => ({
        name: DELIVER_JOB,
        data,
        opts: {
          ...JOB_OPTIONS,
          jobId: deliveryJobId(data),
          ...(delayMs && delayMs > 0 ? { delay: Math.round(delayMs) } : {}),
          // bullmq-otel's carrier format: the propagation headers as JSON.
          ...(traceparent ? { telemetry: { metadata: JSON.stringify({ traceparent }) } } : {}),
        },
      })),
    );
  }

  /**
   * Makes sure a live job exists for this attempt (recovery after a Redis wipe or a crash between
   * commit and enqueue): a waiting, delayed or active job is kept; a finished one, or a job hash
   * left in no list when Redis lost keys mid-write, is replaced.
   * With `now`, a delayed job is promoted so the attempt runs at once (manual retry).
   * @returns true when a job was added or promoted.
   */
  async ensure(job: DeliveryJob, opts: { now?: boolean } = {}): Promise<boolean> {
    const id = deliveryJobId(job);
    const state = await this.queue.getJobState(id);
    if (state === 'delayed') {
      if (!opts.now) return false;
      await (await this.queue.getJob(id))?.promote().catch(() => undefined);
      return true;
    }
    if (state !== 'unknown' && state !== 'completed' && state !== 'failed') return false;
    // A finished job, or an orphaned hash in no list (Redis keys lost mid-write): adding under the
    // same id would be a no-op, so the old one goes first.
    await this.queue.remove(id).catch(() => 0);
    await this.enqueue([job]);
    return true;
  }

  /** Job counts by state, for the queue-depth gauge. */
  counts(): Promise<Record<string, number>> {
    return this.queue.getJobCounts('waiting', 'delayed', 'active', 'prioritized', 'failed');
  }
}
