import { Injectable } from '@nestjs/common';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import { TransactionHost, TxHost } from '../../database/transaction';
import { EndpointDisabledReason, WebhookEndpoint } from './webhooks.entity';

/** An organisation endpoint's targeting as the outbox relay reads it (share-locked). */
export interface EndpointTargeting {
  url: string;
  enabled: boolean;
  events: string[] | null;
}

/**
 * All I/O of `webhook_endpoints` (docs/architecture.md, Conventions 4 and "Ownership map"); every call
 * runs in the caller's transaction.
 */
@Injectable()
export class WebhookEndpointsRepository {
  constructor(private readonly txHost: TransactionHost) {}

  private get manager() {
    return (this.txHost as TxHost).tx;
  }

  private get endpoints() {
    return this.manager.getRepository(WebhookEndpoint);
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
   * The targeting of the organisations' endpoints, share-locked in organisation order (inside the
   * relay's transaction): a PUT that enables an endpoint either commits first (the relay sees it
   * enabled) or waits for the relay's commit (and then releases the rows the relay held).
   */
  async targetingForShare(organizationIds: string[]): Promise<Map<string, EndpointTargeting>> {
    const orgs = [...new Set(organizationIds)].sort();
    if (!orgs.length) return new Map();
    const rows: Array<{ organization_id: string; url: string; enabled: boolean; events: string[] | null }> = await this.manager.query(
      `SELECT organization_id, url, enabled, events FROM webhook_endpoints
        WHERE organization_id = ANY($1::uuid[]) ORDER BY organization_id FOR SHARE`,
      [orgs],
    );
    return new Map(rows.map((w) => [w.organization_id, { url: w.url, enabled: w.enabled, events: w.events }]));
  }
}
