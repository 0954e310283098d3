import { Injectable, Logger } from '@nestjs/common';
import createSubscriber from 'pg-listen';
import { DataSource } from 'typeorm';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import { CoalescingBatcher } from '../../common/batching/coalescing-batcher';
import { keysetPage } from '../../common/http/keyset';
import { AppConfig } from '../../config/app-config';
import { TransactionHost, TxHost } from '../../database/transaction';
import { DeliveryStatus, DeliveryTarget, EndpointDisabledReason, WebhookDelivery, WebhookEndpoint } from './webhooks.entity';

/** Postgres channel the outbox trigger notifies on commit (migration Webhooks1795300003000). */
export const OUTBOX_CHANNEL = 'outbox_events';

/**
 * A delivery leased for one attempt, with its event and the organisation endpoint as it is now
 * (URL, enabled, signing state): an `endpoint` delivery is sent to `endpoint.url`, not to `url`.
 */
export interface LeasedDelivery {
  id: string;
  organizationId: string;
  target: DeliveryTarget;
  /** The URL attempted last (for a `checkout` delivery, its fixed target). */
  url: string;
  attempts: number;
  maxAttempts: number;
  event: { id: string; type: string; createdAt: Date; data: { object: Record<string, unknown> } };
  endpoint: {
    url: string;
    enabled: boolean;
    disabledReason: EndpointDisabledReason | null;
    secretSealed: string;
    previousSecretSealed: string | null;
    previousSecretExpiresAt: Date | null;
    failingSince: Date | null;
  } | null;
}

/**
 * An outbox row claimed by the relay, with its organisation endpoint's targeting as of a share
 * lock on the endpoint row (null: no endpoint).
 */
export interface ClaimedEvent {
  id: string;
  organizationId: string;
  type: string;
  extraTargetUrl: string | null;
  endpoint: { url: string; enabled: boolean; events: string[] | null } | null;
  /** W3C trace context of the transaction that wrote the event (DESIGN §20). */
  traceparent?: string | null;
}

/** A new delivery row built by the relay. */
export interface NewDelivery {
  id: string;
  eventId: string;
  organizationId: string;
  eventType: string;
  target: DeliveryTarget;
  url: string;
  status: DeliveryStatus;
  lastError: string | null;
}

/** What one finished attempt writes to its delivery row. */
export interface AttemptRecord {
  status: DeliveryStatus;
  /** The URL this attempt went to (null: nothing was sent, keep the row's). */
  url: string | null;
  responseStatus: number | null;
  responseBody: string | null;
  lastError: string | null;
  nextAttemptAt: Date | null;
  attemptedAt: Date;
  deliveredAt: Date | null;
}

interface LeaseRow {
  id: string;
  lease_token: string;
  organization_id: string;
  target: DeliveryTarget;
  url: string;
  attempts: number;
  max_attempts: number;
  event_id: string;
  event_type: string;
  event_data: { object: Record<string, unknown> };
  event_created_at: Date;
  endpoint_url: string | null;
  endpoint_enabled: boolean | null;
  endpoint_disabled_reason: EndpointDisabledReason | null;
  secret_sealed: string | null;
  previous_secret_sealed: string | null;
  previous_secret_expires_at: Date | null;
  failing_since: Date | null;
}

interface LeaseRequest {
  id: string;
  attempt: number;
  token: string;
  leaseMs: number;
}

/**
 * All I/O of webhook endpoints, deliveries and the outbox relay (docs/architecture.md, Conventions 4). The worker's
 * per-attempt statements (lease, record) are coalesced across concurrent attempts into one
 * statement per batch ({@link CoalescingBatcher}), outside any caller's transaction.
 */
@Injectable()
export class WebhooksRepository {
  private readonly logger = new Logger('WebhooksRepository');
  private readonly leases = new CoalescingBatcher<LeaseRequest, LeasedDelivery | null>((r) => this.leaseMany(r));
  private readonly records = new CoalescingBatcher<{ id: string; token: string; rec: AttemptRecord }, boolean>((r) => this.recordMany(r));

  constructor(
    private readonly txHost: TransactionHost,
    private readonly config: AppConfig,
    private readonly dataSource: DataSource,
  ) {}

  private get manager() {
    return (this.txHost as TxHost).tx;
  }

  private get endpoints() {
    return this.manager.getRepository(WebhookEndpoint);
  }

  private get deliveries() {
    return this.manager.getRepository(WebhookDelivery);
  }

  findEndpoint(organizationId: string): Promise<WebhookEndpoint | null> {
    return this.endpoints.findOneBy({ organizationId });
  }

  /** The endpoint row locked for update (inside a transaction), so concurrent PUTs serialise. */
  findEndpointForUpdate(organizationId: string): Promise<WebhookEndpoint | null> {
    return this.endpoints.createQueryBuilder('w').where('w.organization_id = :organizationId', { organizationId }).setLock('pessimistic_write').getOne();
  }

  /** Inserts the organisation's endpoint. @returns false when one already exists (a concurrent first PUT won). */
  async insertEndpointIfAbsent(e: WebhookEndpoint): Promise<boolean> {
    const rows: unknown[] = await this.manager.query(
      `INSERT INTO webhook_endpoints (id, organization_id, url, enabled, events, disabled_reason, secret_sealed)
       VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (organization_id) DO NOTHING RETURNING id`,
      [e.id, e.organizationId, e.url, e.enabled, e.events, e.disabledReason, e.secretSealed],
    );
    return rows.length > 0;
  }

  async updateEndpoint(id: string, patch: Partial<WebhookEndpoint>): Promise<void> {
    await this.endpoints.update({ id }, patch as QueryDeepPartialEntity<WebhookEndpoint>);
  }

  /**
   * The endpoint row share-locked (inside a transaction): a concurrent PUT, which holds the row
   * `FOR UPDATE` until it commits, is waited for, so what is read here stays true until commit.
   */
  findEndpointForShare(organizationId: string): Promise<WebhookEndpoint | null> {
    return this.endpoints.createQueryBuilder('w').where('w.organization_id = :organizationId', { organizationId }).setLock('pessimistic_read').getOne();
  }

  /**
   * Disables the organisation's endpoint when it is enabled and its URL is still `url` (a 410
   * Gone from it, docs/architecture.md §8). @returns whether this call disabled it.
   */
  async disableEndpointForUrl(organizationId: string, url: string, reason: EndpointDisabledReason): Promise<boolean> {
    const res = await this.endpoints.update({ organizationId, url, enabled: true }, { enabled: false, disabledReason: reason });
    return (res.affected ?? 0) > 0;
  }

  /** Ends the organisation endpoint's failure streak (a successful attempt at `url`, its current URL). */
  async clearFailing(organizationId: string, url: string): Promise<void> {
    await this.manager.query(`UPDATE webhook_endpoints SET failing_since = NULL WHERE organization_id = $1 AND url = $2 AND failing_since IS NOT NULL`, [
      organizationId,
      url,
    ]);
  }

  /**
   * Makes every `held` endpoint delivery of the organisation `pending` and due now, with room for
   * one more attempt (inside the transaction that enables the endpoint, which holds its row lock).
   * @returns the released deliveries' ids and finished-attempt counts, for their jobs.
   */
  releaseHeld(organizationId: string): Promise<Array<{ id: string; attempts: number }>> {
    return this.manager.query(
      `WITH released AS (
         UPDATE webhook_deliveries
            SET status = 'pending', next_attempt_at = now(), max_attempts = GREATEST(max_attempts, attempts + 1), updated_at = now()
          WHERE organization_id = $1 AND status = 'held' AND target = 'endpoint'
         RETURNING id, attempts)
       SELECT id, attempts FROM released`,
      [organizationId],
    );
  }

  /**
   * Parks a leased delivery as `held` (nothing sent, attempts unchanged) and releases the lease,
   * only while `token` holds it; call inside the transaction that share-locked the endpoint and
   * saw it disabled. @returns false when the lease was lost.
   */
  async holdLeased(id: string, token: string): Promise<boolean> {
    const rows: unknown[] = await this.manager.query(
      `WITH held AS (
         UPDATE webhook_deliveries
            SET status = 'held', next_attempt_at = NULL, lease_token = NULL, lease_expires_at = NULL, updated_at = now()
          WHERE id = $1 AND lease_token = $2
         RETURNING id)
       SELECT id FROM held`,
      [id, token],
    );
    return rows.length > 0;
  }

  findDelivery(organizationId: string, id: string): Promise<WebhookDelivery | null> {
    return this.deliveries.findOneBy({ id, organizationId });
  }

  /** Newest first, `limit + 1` rows, optionally filtered by status and event type. */
  listDeliveries(
    organizationId: string,
    limit: number,
    startingAfter: string | undefined,
    filters: { status?: DeliveryStatus; eventType?: string },
  ): Promise<WebhookDelivery[]> {
    return keysetPage(
      () => this.deliveries.createQueryBuilder('d'),
      'd',
      { sql: 'd.organization_id = :org', params: { org: organizationId } },
      limit,
      startingAfter,
      (qb) => {
        if (filters.status) qb.andWhere('d.status = :status', { status: filters.status });
        if (filters.eventType) qb.andWhere('d.event_type = :eventType', { eventType: filters.eventType });
      },
    );
  }

  /**
   * Re-arms a delivery for one more attempt now (manual retry): status `pending`, due now, and
   * room for one attempt beyond those already made.
   * @returns the updated row, or null when it is not this organisation's.
   */
  async rearmDelivery(organizationId: string, id: string): Promise<WebhookDelivery | null> {
    const result = await this.deliveries
      .createQueryBuilder()
      .update()
      .set({ status: 'pending', nextAttemptAt: () => 'now()', maxAttempts: () => 'GREATEST(max_attempts, attempts + 1)' })
      .where('id = :id AND organization_id = :organizationId', { id, organizationId })
      .execute();
    return result.affected ? this.findDelivery(organizationId, id) : null;
  }

  /**
   * Claims up to `limit` unrelayed outbox rows, oldest first, locking them `FOR UPDATE SKIP
   * LOCKED` so concurrent relays take different rows, then share-locks their organisations'
   * endpoint rows and reads the targeting from them (inside a transaction): a PUT that enables
   * the endpoint either commits first (the relay sees it enabled) or waits for the relay's
   * commit (and then releases the rows the relay held). The event data is not read.
   */
  async claimPendingEvents(limit: number): Promise<ClaimedEvent[]> {
    const rows: Array<{ id: string; organization_id: string; type: string; extra_target_url: string | null; traceparent: string | null }> = await this.manager.query(
      `SELECT e.id, e.organization_id, e.type, e.extra_target_url, e.traceparent
         FROM outbox_events e
        WHERE e.relayed_at IS NULL
        ORDER BY e.created_at, e.id
        LIMIT $1
        FOR UPDATE SKIP LOCKED`,
      [limit],
    );
    if (rows.length === 0) return [];
    const orgs = [...new Set(rows.map((r) => r.organization_id))].sort();
    const endpoints: Array<{ organization_id: string; url: string; enabled: boolean; events: string[] | null }> = await this.manager.query(
      `SELECT organization_id, url, enabled, events FROM webhook_endpoints
        WHERE organization_id = ANY($1::uuid[]) ORDER BY organization_id FOR SHARE`,
      [orgs],
    );
    const byOrg = new Map(endpoints.map((w) => [w.organization_id, { url: w.url, enabled: w.enabled, events: w.events }]));
    return rows.map((r) => ({
      id: r.id,
      organizationId: r.organization_id,
      type: r.type,
      extraTargetUrl: r.extra_target_url,
      endpoint: byOrg.get(r.organization_id) ?? null,
      traceparent: r.traceparent,
    }));
  }

  /**
   * Inserts delivery rows (ignoring (event, target) pairs that exist; only `pending` rows are due) and marks the events relayed,
   * in one statement (inside the claiming transaction).
   * @returns the rows actually inserted (id and status).
   */
  async insertDeliveriesAndMarkRelayed(rows: NewDelivery[], eventIds: string[]): Promise<Array<{ id: string; status: DeliveryStatus }>> {
    const col = <K extends keyof NewDelivery>(k: K) => rows.map((r) => r[k]);
    return this.manager.query(
      `WITH ins AS (
         INSERT INTO webhook_deliveries (id, event_id, organization_id, event_type, target, url, status, last_error, next_attempt_at)
         SELECT d.id, d.event_id, d.organization_id, d.event_type, d.target, d.url, d.status, d.last_error,
                CASE WHEN d.status = 'pending' THEN now() END
           FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[])
                AS d(id, event_id, organization_id, event_type, target, url, status, last_error)
         ON CONFLICT (event_id, target) DO NOTHING
         RETURNING id, status),
       relayed AS (UPDATE outbox_events SET relayed_at = now() WHERE id = ANY($9::uuid[]))
       SELECT id, status FROM ins`,
      [col('id'), col('eventId'), col('organizationId'), col('eventType'), col('target'), col('url'), col('status'), col('lastError'), eventIds],
    );
  }

  /**
   * Leases a delivery for the attempt after `attempt` finished ones, for `leaseMs`: only while it
   * is pending/retrying, has exactly `attempt` attempts, room for another, and no live lease.
   * @returns the delivery with its event and endpoint, or null when the attempt is not due here.
   */
  lease(id: string, attempt: number, token: string, leaseMs: number): Promise<LeasedDelivery | null> {
    return this.leases.call({ id, attempt, token, leaseMs });
  }

  private async leaseMany(reqs: LeaseRequest[]): Promise<Array<LeasedDelivery | null>> {
    const rows: LeaseRow[] = await this.dataSource.query(
      `WITH req AS (SELECT * FROM unnest($1::uuid[], $2::int[], $3::uuid[], $4::int[]) AS r(id, attempt, token, lease_ms)),
       d AS (
         UPDATE webhook_deliveries w
            SET lease_token = req.token, lease_expires_at = now() + req.lease_ms * interval '1 millisecond'
           FROM req
          WHERE w.id = req.id AND w.attempts = req.attempt AND w.attempts < w.max_attempts AND w.status IN ('pending', 'retrying')
            AND (w.lease_expires_at IS NULL OR w.lease_expires_at < now())
          RETURNING w.id, w.organization_id, w.target, w.url, w.attempts, w.max_attempts, w.event_id, w.lease_token)
       SELECT d.*, e.type AS event_type, e.data AS event_data, e.created_at AS event_created_at,
              ep.url AS endpoint_url, ep.enabled AS endpoint_enabled, ep.disabled_reason AS endpoint_disabled_reason,
              ep.secret_sealed, ep.previous_secret_sealed, ep.previous_secret_expires_at, ep.failing_since
         FROM d JOIN outbox_events e ON e.id = d.event_id
         LEFT JOIN webhook_endpoints ep ON ep.organization_id = d.organization_id`,
      [reqs.map((r) => r.id), reqs.map((r) => r.attempt), reqs.map((r) => r.token), reqs.map((r) => r.leaseMs)],
    );
    const byKey = new Map(rows.map((r) => [`${r.id}|${r.lease_token}`, r]));
    return reqs.map((q) => {
      const r = byKey.get(`${q.id}|${q.token}`);
      if (!r) return null;
      return {
        id: r.id,
        organizationId: r.organization_id,
        target: r.target,
        url: r.url,
        attempts: r.attempts,
        maxAttempts: r.max_attempts,
        event: { id: r.event_id, type: r.event_type, createdAt: new Date(r.event_created_at), data: r.event_data },
        endpoint:
          r.secret_sealed === null
            ? null
            : {
                url: r.endpoint_url!,
                enabled: r.endpoint_enabled!,
                disabledReason: r.endpoint_disabled_reason,
                secretSealed: r.secret_sealed,
                previousSecretSealed: r.previous_secret_sealed,
                previousSecretExpiresAt: r.previous_secret_expires_at ? new Date(r.previous_secret_expires_at) : null,
                failingSince: r.failing_since ? new Date(r.failing_since) : null,
              },
      };
    });
  }

  /**
   * Writes a finished attempt (attempts + 1) and releases the lease, only while `token` still
   * holds it. @returns false when the lease was lost (another worker took over after it expired).
   */
  recordAttempt(id: string, token: string, rec: AttemptRecord): Promise<boolean> {
    return this.records.call({ id, token, rec });
  }

  /** {@link recordAttempt} inside the caller's transaction (when the attempt also disables the endpoint). */
  async recordAttemptInTransaction(id: string, token: string, rec: AttemptRecord): Promise<boolean> {
    return (await this.recordMany([{ id, token, rec }], this.manager.query.bind(this.manager)))[0];
  }

  /** One UPDATE for the batch, wrapped in a CTE so the driver returns plain rows (a top-level UPDATE returns [rows, count]). */
  private async recordMany(
    items: Array<{ id: string; token: string; rec: AttemptRecord }>,
    query: (sql: string, params: unknown[]) => Promise<Array<{ id: string; token: string }>> = (sql, params) => this.dataSource.query(sql, params),
  ): Promise<boolean[]> {
    const col = <T>(f: (i: (typeof items)[number]) => T) => items.map(f);
    const rows = await query(
      `WITH done AS (
       UPDATE webhook_deliveries w
          SET status = v.status, url = COALESCE(v.url, w.url), attempts = w.attempts + 1, response_status = v.response_status, response_body = v.response_body,
              last_error = v.last_error, next_attempt_at = v.next_attempt_at, last_attempt_at = v.last_attempt_at,
              delivered_at = COALESCE(v.delivered_at, w.delivered_at), lease_token = NULL, lease_expires_at = NULL, updated_at = now()
         FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::int[], $5::text[], $6::text[], $7::timestamptz[], $8::timestamptz[], $9::timestamptz[], $10::text[])
              AS v(id, token, status, response_status, response_body, last_error, next_attempt_at, last_attempt_at, delivered_at, url)
        WHERE w.id = v.id AND w.lease_token = v.token
        RETURNING w.id, v.token)
       SELECT id, token FROM done`,
      [
        col((i) => i.id),
        col((i) => i.token),
        col((i) => i.rec.status),
        col((i) => i.rec.responseStatus),
        col((i) => i.rec.responseBody),
        col((i) => i.rec.lastError),
        col((i) => i.rec.nextAttemptAt),
        col((i) => i.rec.attemptedAt),
        col((i) => i.rec.deliveredAt),
        col((i) => i.rec.url),
      ],
    );
    const done = new Set(rows.map((r) => `${r.id}|${r.token}`));
    return items.map((i) => done.has(`${i.id}|${i.token}`));
  }

  /**
   * Deliveries whose next attempt has been due for at least `overdueMs` and that nobody holds
   * (recovery of lost jobs).
   * @returns id and finished-attempt count, oldest due first.
   */
  async findDueUnleased(limit: number, overdueMs = 0): Promise<Array<{ id: string; attempts: number }>> {
    return this.manager.query(
      `SELECT id, attempts FROM webhook_deliveries
        WHERE status IN ('pending', 'retrying') AND next_attempt_at <= now() - $2 * interval '1 millisecond' AND attempts < max_attempts
          AND (lease_expires_at IS NULL OR lease_expires_at < now())
        ORDER BY next_attempt_at LIMIT $1`,
      [limit, overdueMs],
    );
  }

  /**
   * Runs `pass` on a connection of its own while holding the cluster-wide session advisory lock
   * `key` (`pg_try_advisory_lock`), so of several worker replicas only one runs it at a time;
   * the lock ends with the pass (or with the connection, should the process die).
   * @returns the pass's result, or null when another session holds the lock.
   */
  async underAdvisoryLock<T>(key: string, pass: (query: (sql: string, params: unknown[]) => Promise<unknown[]>) => Promise<T>): Promise<T | null> {
    const qr = this.dataSource.createQueryRunner();
    await qr.connect();
    try {
      const [{ locked }] = (await qr.query(`SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS locked`, [key])) as Array<{ locked: boolean }>;
      if (!locked) return null;
      try {
        return await pass((sql, params) => qr.query(sql, params) as Promise<unknown[]>);
      } finally {
        await qr.query(`SELECT pg_advisory_unlock(hashtextextended($1, 0))`, [key]);
      }
    } finally {
      await qr.release();
    }
  }

  /**
   * Deletes up to `limit` events created more than `days` days ago that were relayed and have no
   * delivery still in flight (`pending`, `retrying`), oldest first, with their deliveries
   * (cascade), through `query` (the connection of {@link underAdvisoryLock}).
   * @returns how many events and deliveries were deleted.
   */
  async deleteExpiredEvents(query: (sql: string, params: unknown[]) => Promise<unknown[]>, days: number, limit: number): Promise<{ events: number; deliveries: number }> {
    const [row] = (await query(
      // The batch's ids as one array (an InitPlan): both DELETEs are then index look-ups of those
      // ids, where a join with the batch may be planned as a sequential scan of the whole table
      // (DESIGN §23; test/integration/scale-plans.int-spec.ts checks the plan).
      `WITH doomed AS (
         SELECT ARRAY(
           SELECT e.id FROM outbox_events e
            WHERE e.created_at < now() - $1 * interval '1 day' AND e.relayed_at IS NOT NULL
              AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id AND d.status IN ('pending', 'retrying'))
            ORDER BY e.created_at
            LIMIT $2
            FOR UPDATE SKIP LOCKED) AS ids),
       dd AS (DELETE FROM webhook_deliveries d WHERE d.event_id = ANY((SELECT ids FROM doomed)::uuid[]) RETURNING 1),
       de AS (DELETE FROM outbox_events e WHERE e.id = ANY((SELECT ids FROM doomed)::uuid[]) RETURNING 1)
       SELECT (SELECT count(*) FROM de)::int AS events, (SELECT count(*) FROM dd)::int AS deliveries`,
      [days, limit],
    )) as Array<{ events: number; deliveries: number }>;
    return row;
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
  async listenForOutbox(onNotify: () => void, onError: (err: Error) => void): Promise<() => Promise<void>> {
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
