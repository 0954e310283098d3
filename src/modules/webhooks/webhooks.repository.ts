import { Injectable } from '@nestjs/common';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import { CoalescingBatcher } from '../../common/batching/coalescing-batcher';
import { keysetPage } from '../../common/http/keyset';
import { AppConfig } from '../../config/app-config';
import { TransactionHost, TxHost } from '../../database/transaction';
import { DeliveryStatus, EndpointDisabledReason, WebhookDelivery, WebhookEndpoint } from './webhooks.entity';

/** Postgres channel the outbox trigger notifies on commit (migration Webhooks1795300003000). */
export const OUTBOX_CHANNEL = 'outbox_events';

/** A delivery leased for one attempt, with its event and the organisation endpoint's signing state. */
export interface LeasedDelivery {
  id: string;
  organizationId: string;
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
  } | null;
}

/** An outbox row claimed by the relay, with its organisation endpoint's targeting (null: no endpoint). */
export interface ClaimedEvent {
  id: string;
  organizationId: string;
  type: string;
  extraTargetUrl: string | null;
  endpoint: { url: string; enabled: boolean; events: string[] | null } | null;
}

/** A new delivery row built by the relay. */
export interface NewDelivery {
  id: string;
  eventId: string;
  organizationId: string;
  eventType: string;
  url: string;
  status: DeliveryStatus;
  lastError: string | null;
}

/** What one finished attempt writes to its delivery row. */
export interface AttemptRecord {
  status: DeliveryStatus;
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
}

interface LeaseRequest {
  id: string;
  attempt: number;
  token: string;
  leaseMs: number;
}

/**
 * All I/O of webhook endpoints, deliveries and the outbox relay (STYLE §4). The worker's
 * per-attempt statements (lease, record) are coalesced across concurrent attempts into one
 * statement per batch ({@link CoalescingBatcher}), outside any caller's transaction.
 */
@Injectable()
export class WebhooksRepository {
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

  /** Disables the organisation's endpoint when its URL is `url` (a 410 Gone from it, DESIGN §8). */
  async disableEndpointForUrl(organizationId: string, url: string, reason: EndpointDisabledReason): Promise<void> {
    await this.endpoints.update({ organizationId, url, enabled: true }, { enabled: false, disabledReason: reason });
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
   * Claims up to `limit` unrelayed outbox rows, oldest first, with their organisation's endpoint
   * targeting, locking them `FOR UPDATE SKIP LOCKED` so concurrent relays take different rows
   * (inside a transaction). The event data is not read: deliveries reference the event.
   */
  async claimPendingEvents(limit: number): Promise<ClaimedEvent[]> {
    const rows: Array<{ id: string; organization_id: string; type: string; extra_target_url: string | null; url: string | null; enabled: boolean | null; events: string[] | null }> =
      await this.manager.query(
        `SELECT e.id, e.organization_id, e.type, e.extra_target_url, w.url, w.enabled, w.events
           FROM outbox_events e LEFT JOIN webhook_endpoints w ON w.organization_id = e.organization_id
          WHERE e.relayed_at IS NULL
          ORDER BY e.created_at, e.id
          LIMIT $1
          FOR UPDATE OF e SKIP LOCKED`,
        [limit],
      );
    return rows.map((r) => ({
      id: r.id,
      organizationId: r.organization_id,
      type: r.type,
      extraTargetUrl: r.extra_target_url,
      endpoint: r.url === null ? null : { url: r.url, enabled: r.enabled!, events: r.events },
    }));
  }

  /**
   * Inserts delivery rows (ignoring (event, url) pairs that exist) and marks the events relayed,
   * in one statement (inside the claiming transaction).
   * @returns the rows actually inserted (id and status).
   */
  async insertDeliveriesAndMarkRelayed(rows: NewDelivery[], eventIds: string[]): Promise<Array<{ id: string; status: DeliveryStatus }>> {
    const col = <K extends keyof NewDelivery>(k: K) => rows.map((r) => r[k]);
    return this.manager.query(
      `WITH ins AS (
         INSERT INTO webhook_deliveries (id, event_id, organization_id, event_type, url, status, last_error, next_attempt_at)
         SELECT d.id, d.event_id, d.organization_id, d.event_type, d.url, d.status, d.last_error,
                CASE WHEN d.status = 'pending' THEN now() END
           FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $5::text[], $6::text[], $7::text[])
                AS d(id, event_id, organization_id, event_type, url, status, last_error)
         ON CONFLICT (event_id, url) DO NOTHING
         RETURNING id, status),
       relayed AS (UPDATE outbox_events SET relayed_at = now() WHERE id = ANY($8::uuid[]))
       SELECT id, status FROM ins`,
      [col('id'), col('eventId'), col('organizationId'), col('eventType'), col('url'), col('status'), col('lastError'), eventIds],
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
          RETURNING w.id, w.organization_id, w.url, w.attempts, w.max_attempts, w.event_id, w.lease_token)
       SELECT d.*, e.type AS event_type, e.data AS event_data, e.created_at AS event_created_at,
              ep.url AS endpoint_url, ep.enabled AS endpoint_enabled, ep.disabled_reason AS endpoint_disabled_reason,
              ep.secret_sealed, ep.previous_secret_sealed, ep.previous_secret_expires_at
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
          SET status = v.status, attempts = w.attempts + 1, response_status = v.response_status, response_body = v.response_body,
              last_error = v.last_error, next_attempt_at = v.next_attempt_at, last_attempt_at = v.last_attempt_at,
              delivered_at = COALESCE(v.delivered_at, w.delivered_at), lease_token = NULL, lease_expires_at = NULL, updated_at = now()
         FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::int[], $5::text[], $6::text[], $7::timestamptz[], $8::timestamptz[], $9::timestamptz[])
              AS v(id, token, status, response_status, response_body, last_error, next_attempt_at, last_attempt_at, delivered_at)
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
   * LISTENs on {@link OUTBOX_CHANNEL} with a dedicated connection; `onNotify` runs after each
   * commit that inserted outbox rows, `onError` when the connection drops.
   * @returns a function that closes the connection.
   */
  async listenForOutbox(onNotify: () => void, onError: (err: Error) => void): Promise<() => Promise<void>> {
    const client = new Client({ connectionString: this.config.env.DATABASE_URL });
    client.on('notification', () => onNotify());
    client.on('error', onError);
    client.on('end', () => onError(new Error('LISTEN connection closed')));
    await client.connect();
    await client.query(`LISTEN ${OUTBOX_CHANNEL}`);
    return async () => {
      client.removeAllListeners();
      client.on('error', () => undefined);
      await client.end().catch(() => undefined);
    };
  }
}
