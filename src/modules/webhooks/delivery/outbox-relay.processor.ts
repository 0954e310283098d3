import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { OutboxRelayService } from './outbox-relay.service';

/** Events claimed per relay transaction. */
export const RELAY_BATCH = 1000;
/** Poll interval when no notification arrives (a dropped LISTEN connection, a missed NOTIFY). */
export const RELAY_POLL_MS = 1000;
const RELISTEN_MS = 1000;

/**
 * Drives the outbox relay in the worker (registered in WorkerModule only): a loop that relays
 * batches back to back while events wait, then sleeps until Postgres notifies a commit of new
 * outbox rows (LISTEN/NOTIFY, so event-to-job latency is a round trip, not a poll period) or
 * {@link RELAY_POLL_MS} passes. A batch's jobs are enqueued while the next batch is claimed (at
 * most one enqueue outstanding). Several workers may run it; SKIP LOCKED keeps their claims apart.
 */
@Injectable()
export class OutboxRelayProcessor implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('OutboxRelay');
  private running = false;
  private notified = false;
  private wake: (() => void) | null = null;
  private loop: Promise<void> | null = null;
  private unlisten: (() => Promise<void>) | null = null;
  private relistenTimer: NodeJS.Timeout | null = null;
  private lastEnqueue: Promise<void> = Promise.resolve();

  constructor(private readonly relay: OutboxRelayService) {}

  onApplicationBootstrap(): void {
    this.running = true;
    void this.listen();
    this.loop = this.run();
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.running = false;
    if (this.relistenTimer) clearTimeout(this.relistenTimer);
    this.wake?.();
    await this.loop;
    await this.lastEnqueue;
    await this.unlisten?.();
  }

  private readonly onNotify = (): void => {
    this.notified = true;
    this.wake?.();
  };

  private async listen(): Promise<void> {
    try {
      this.unlisten = await this.relay.onNewEvents(this.onNotify, (err) => {
        this.logger.warn({ err: err.message }, 'outbox LISTEN gave up reconnecting; polling until a new one listens');
        const close = this.unlisten;
        this.unlisten = null;
        void close?.();
        this.scheduleRelisten();
      });
      if (!this.running) await this.unlisten();
    } catch (err) {
      this.logger.warn({ err: (err as Error).message }, 'outbox LISTEN failed; polling until it works');
      this.scheduleRelisten();
    }
  }

  private scheduleRelisten(): void {
    if (!this.running || this.relistenTimer) return;
    this.relistenTimer = setTimeout(() => {
      this.relistenTimer = null;
      if (this.running) void this.listen();
    }, RELISTEN_MS);
  }

  private async run(): Promise<void> {
    while (this.running) {
      this.notified = false;
      let relayed = 0;
      try {
        const { count, jobs } = await this.relay.relayInTransaction(RELAY_BATCH);
        relayed = count;
        const enqueue = this.relay.enqueue(jobs);
        await this.lastEnqueue;
        this.lastEnqueue = enqueue;
      } catch (err) {
        this.logger.error({ err }, 'outbox relay batch failed');
      }
      if (!this.running) break;
      if (relayed >= RELAY_BATCH || this.notified) continue;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, RELAY_POLL_MS);
        this.wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.wake = null;
    }
  }
}
