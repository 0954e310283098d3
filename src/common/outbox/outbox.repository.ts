import { Injectable, Logger } from '@nestjs/common';
import createSubscriber from 'pg-listen';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import { AppConfig } from '../../config/app-config';
import { TransactionHost, TxHost } from '../../database/transaction';
import { OutboxEvent } from './outbox-event.entity';

/** Postgres channel the outbox trigger notifies on commit (migration Webhooks1795300003000). */
export const OUTBOX_CHANNEL = 'outbox_events';

/** An unrelayed outbox row claimed by a relay (its data is not read). */
export interface PendingEvent {
  id: string;
  organizationId: string;
  type: string;
  extraTargetUrl: string | null;
  /** W3C trace context of the transaction that wrote the event (DESIGN §20). */
  traceparent: string | null;
}

/**
 * The outbox table's reads and writes after the insert ({@link EventsService.emit} writes events in
 * the business transaction): the relay's claim and mark, the retention's lock and delete, and the
 * LISTEN that wakes the relay (DESIGN §8; docs/architecture.md "Ownership map": `outbox_events`
 * belongs to `src/common/outbox`). Every statement but {@link listen} runs in the caller's transaction.
 */
@Injectable()
export class OutboxRepository {
  private readonly logger = new Logger('OutboxRepository');

  constructor(
    private readonly txHost: TransactionHost,
    private readonly config: AppConfig,
  ) {}

  private get manager() {
    return (this.txHost as TxHost).tx;
  }

  /**
   * Claims up to `limit` unrelayed rows, oldest first, locking them `FOR UPDATE SKIP LOCKED` so
   * concurrent relays take different rows (inside a transaction, which holds them until it commits).
   */
  async claimPending(limit: number): Promise<PendingEvent[]> {
    const rows: Array<{ id: string; organization_id: string; type: string; extra_target_url: string | null; traceparent: string | null }> = await this.manager.query(
      `SELECT e.id, e.organization_id, e.type, e.extra_target_url, e.traceparent
         FROM outbox_events e
        WHERE e.relayed_at IS NULL
        ORDER BY e.created_at, e.id
        LIMIT $1
        FOR UPDATE SKIP LOCKED`,
      [limit],
    );
    return rows.map((r) => ({ id: r.id, organizationId: r.organization_id, type: r.type, extraTargetUrl: r.extra_target_url, traceparent: r.traceparent }));
  }

  /** Marks the events relayed (inside the claiming transaction). */
  async markRelayed(ids: string[]): Promise<void> {
    if (ids.length) await this.manager.query(`UPDATE outbox_events SET relayed_at = now() WHERE id = ANY($1::uuid[])`, [ids]);
  }

  /**
   * Inserts an event that is relayed already (its deliveries are written with it, e.g. the console's
   * test `ping`): the relay never fans it out. Call inside a transaction.
   */
  async insertRelayed(event: { id: string; organizationId: string; type: string; data: { object: Record<string, unknown> } }): Promise<void> {
    const row: Partial<OutboxEvent> = { ...event, extraTargetUrl: null, relayedAt: new Date(), traceparent: null };
    await this.manager.getRepository(OutboxEvent).insert(row as QueryDeepPartialEntity<OutboxEvent>);
  }

  /**
   * The events `ids` as a delivery sends them (type, payload, creation time), keyed by id; ids with no
   * row (deleted by the retention) are absent. One index look-up per id, in the caller's transaction
   * if any (the webhook delivery lease reads its events here: the table is this module's).
   */
  async eventsByIds(ids: string[]): Promise<Map<string, { type: string; createdAt: Date; data: { object: Record<string, unknown> } }>> {
    if (!ids.length) return new Map();
    const rows: Array<{ id: string; type: string; data: { object: Record<string, unknown> }; created_at: Date }> = await this.manager.query(
      `SELECT e.id, e.type, e.data, e.created_at FROM outbox_events e WHERE e.id = ANY($1::uuid[])`,
      [[...new Set(ids)]],
    );
    return new Map(rows.map((r) => [r.id, { type: r.type, createdAt: new Date(r.created_at), data: r.data }]));
  }

  /**
   * Locks up to `limit` relayed events created more than `days` days ago, oldest first, created after
   * `after` (the `created_at` text, microseconds kept, of the last one a previous batch of the pass looked at; events of that same instant left
   * past the batch's end wait for the next pass), `FOR UPDATE SKIP LOCKED` (inside a transaction).
   * One index range on `created_at`; the deletes that follow are index look-ups of the ids (DESIGN §23).
   */
  async lockExpired(days: number, limit: number, after: string | null): Promise<Array<{ id: string; createdAt: string }>> {
    const rows: Array<{ id: string; created_at: string }> = await this.manager.query(
      `SELECT e.id, e.created_at::text AS created_at FROM outbox_events e
        WHERE e.created_at < now() - $1 * interval '1 day' AND e.relayed_at IS NOT NULL
          AND ($3::timestamptz IS NULL OR e.created_at > $3::timestamptz)
        ORDER BY e.created_at
        LIMIT $2
        FOR UPDATE SKIP LOCKED`,
      [days, limit, after],
    );
    return rows.map((r) => ({ id: r.id, createdAt: r.created_at }));
  }

  /**
   * Deletes the events `ids` (their deliveries go by the foreign key's cascade). @returns how many were deleted.
   * The ids are a sub-select (an InitPlan): planned without their count, the delete stays an index
   * look-up where a 5 000-element array may be planned as a sequential scan (DESIGN §23; scale-plans).
   */
  async deleteEvents(ids: string[]): Promise<number> {
    if (!ids.length) return 0;
    const rows: unknown[] = await this.manager.query(`WITH de AS (DELETE FROM outbox_events WHERE id = ANY((SELECT $1::uuid[])::uuid[]) RETURNING 1) SELECT 1 FROM de`, [ids]);
    return rows.length;
  }

  /**
   * LISTENs on {@link OUTBOX_CHANNEL} through `pg-listen` (a dedicated connection that it checks every
   * 10 s, reconnects with back-off and LISTENs again; issue 19 "libraries instead of our own code").
   * `onNotify` runs after each commit that inserted outbox rows, and once after every reconnect
   * (commits made while it was away sent no notification it could hear); `onError` when it gave up
   * reconnecting (after 60 s): the caller closes it and listens anew.
   * @returns a function that closes the connection.
   * @throws Error when the first connection or LISTEN fails.
   */
  async listen(onNotify: () => void, onError: (err: Error) => void): Promise<() => Promise<void>> {
    const subscriber = createSubscriber(
      // Named, so operators (and tests) find it in pg_stat_activity.
      { connectionString: this.config.env.DATABASE_URL, application_name: 'outbox-listen' },
      { parse: (payload: string) => payload, paranoidChecking: 10_000, retryInterval: (attempt: number) => Math.min(5_000, 250 * 2 ** attempt), retryTimeout: 60_000 },
    );
    subscriber.notifications.on(OUTBOX_CHANNEL, () => onNotify());
    subscriber.events.on('reconnect', (attempt: number) => this.logger.warn({ attempt }, 'outbox LISTEN connection lost; reconnecting'));
    subscriber.events.on('connected', () => onNotify());
    subscriber.events.on('error', onError);
    try {
      await subscriber.connect();
      await subscriber.listenTo(OUTBOX_CHANNEL);
    } catch (err) {
      await subscriber.close().catch(() => undefined);
      throw err;
    }
    return async () => {
      for (const e of ['reconnect', 'connected', 'error'] as const) subscriber.events.removeAllListeners(e);
      subscriber.notifications.removeAllListeners(OUTBOX_CHANNEL);
      subscriber.events.on('error', () => undefined);
      await subscriber.close().catch(() => undefined);
    };
  }
}
