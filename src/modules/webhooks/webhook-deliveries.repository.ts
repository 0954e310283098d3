import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { CoalescingBatcher } from '../../common/batching/coalescing-batcher';
import { OutboxRepository } from '../../common/outbox/outbox.repository';
import { keysetPage } from '../../common/http/keyset';
import { TransactionHost, TxHost } from '../../database/transaction';
import { DeliveryStatus, DeliveryTarget, EndpointDisabledReason, WebhookDelivery } from './webhooks.entity';

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
 * All I/O of `webhook_deliveries` (docs/architecture.md, Conventions 4 and "Ownership map"). The
 * worker's per-attempt statements (lease, record) are coalesced across concurrent attempts into one
 * statement per batch ({@link CoalescingBatcher}), outside any caller's transaction; the lease reads
 * the delivery's endpoint in that same statement and the batch's events through their owner
 * ({@link OutboxRepository.eventsByIds}), one more statement per batch.
 */
@Injectable()
export class WebhookDeliveriesRepository {
  private readonly leases = new CoalescingBatcher<LeaseRequest, LeasedDelivery | null>((r) => this.leaseMany(r));
  private readonly records = new CoalescingBatcher<{ id: string; token: string; rec: AttemptRecord }, boolean>((r) => this.recordMany(r));

  constructor(
    private readonly txHost: TransactionHost,
    private readonly dataSource: DataSource,
    private readonly outbox: OutboxRepository,
  ) {}

  private get manager() {
    return (this.txHost as TxHost).tx;
  }

  private get deliveries() {
    return this.manager.getRepository(WebhookDelivery);
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
   * Inserts delivery rows, ignoring (event, target) pairs that exist; only `pending` rows are due
   * (inside the relay's transaction, which marks the events relayed with them).
   * @returns the rows actually inserted (id and status).
   */
  async insertDeliveries(rows: NewDelivery[]): Promise<Array<{ id: string; status: DeliveryStatus }>> {
    if (!rows.length) return [];
    const col = <K extends keyof NewDelivery>(k: K) => rows.map((r) => r[k]);
    return this.manager.query(
      `WITH ins AS (
         INSERT INTO webhook_deliveries (id, event_id, organization_id, event_type, target, url, status, last_error, next_attempt_at)
         SELECT d.id, d.event_id, d.organization_id, d.event_type, d.target, d.url, d.status, d.last_error,
                CASE WHEN d.status = 'pending' THEN now() END
           FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[])
                AS d(id, event_id, organization_id, event_type, target, url, status, last_error)
         ON CONFLICT (event_id, target) DO NOTHING
         RETURNING id, status)
       SELECT id, status FROM ins`,
      [col('id'), col('eventId'), col('organizationId'), col('eventType'), col('target'), col('url'), col('status'), col('lastError')],
    );
  }

  /** Of the events `eventIds`, those with a delivery still in flight (`pending`, `retrying`): the retention keeps them. */
  async eventsInFlight(eventIds: string[]): Promise<Set<string>> {
    if (!eventIds.length) return new Set();
    const rows: Array<{ event_id: string }> = await this.manager.query(
      `SELECT DISTINCT d.event_id FROM webhook_deliveries d WHERE d.event_id = ANY((SELECT $1::uuid[])::uuid[]) AND d.status IN ('pending', 'retrying')`,
      [eventIds],
    );
    return new Set(rows.map((r) => r.event_id));
  }

  /** Deletes the deliveries of the events `eventIds` (the retention, before it deletes the events; the ids as a sub-select, see OutboxRepository.deleteEvents). @returns how many. */
  async deleteForEvents(eventIds: string[]): Promise<number> {
    if (!eventIds.length) return 0;
    const rows: unknown[] = await this.manager.query(`WITH dd AS (DELETE FROM webhook_deliveries d WHERE d.event_id = ANY((SELECT $1::uuid[])::uuid[]) RETURNING 1) SELECT 1 FROM dd`, [eventIds]);
    return rows.length;
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
       SELECT d.*, ep.url AS endpoint_url, ep.enabled AS endpoint_enabled, ep.disabled_reason AS endpoint_disabled_reason,
              ep.secret_sealed, ep.previous_secret_sealed, ep.previous_secret_expires_at, ep.failing_since
         FROM d LEFT JOIN webhook_endpoints ep ON ep.organization_id = d.organization_id`,
      [reqs.map((r) => r.id), reqs.map((r) => r.attempt), reqs.map((r) => r.token), reqs.map((r) => r.leaseMs)],
    );
    // The events through their owner (src/common/outbox): one more statement per batch, not per delivery.
    const events = await this.outbox.eventsByIds(rows.map((r) => r.event_id));
    const byKey = new Map(rows.map((r) => [`${r.id}|${r.lease_token}`, r]));
    return reqs.map((q) => {
      const r = byKey.get(`${q.id}|${q.token}`);
      const event = r && events.get(r.event_id);
      // A delivery whose event the retention deleted is not sent (as the former inner join had it).
      if (!r || !event) return null;
      return {
        id: r.id,
        organizationId: r.organization_id,
        target: r.target,
        url: r.url,
        attempts: r.attempts,
        maxAttempts: r.max_attempts,
        event: { id: r.event_id, ...event },
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
}
