import { Injectable, Logger } from '@nestjs/common';
import { v7 as uuidv7 } from 'uuid';
import type { Principal } from '../../kernel/auth/principal';
import { ListPage, toPage } from '../../common/http/list.dto';
import { Propagation, TransactionHost, TxHost } from '../../database/transaction';
import { generateWebhookSecret } from './delivery/webhook-signing';
import { ListWebhookDeliveriesQueryDto, WebhookDeliveryDto } from './dto/webhook-delivery.dto';
import { PutWebhookEndpointDto, WebhookEndpointDto } from './dto/webhook-endpoint.dto';
import { PING_EVENT_TYPE, WebhookEndpoint } from './webhooks.entity';
import { WebhookErrors } from './webhooks.errors';
import { WebhooksMapper } from './webhooks.mapper';
import { DeliveryQueue } from './webhooks.queue';
import { OutboxRepository } from '../../common/outbox/outbox.repository';
import { WebhookDeliveriesRepository } from './webhook-deliveries.repository';
import { WebhookEndpointsRepository } from './webhook-endpoints.repository';
import { ROTATION_OVERLAP_MS, SealedSecrets, WebhookSecrets } from './webhook-secrets.service';
import { WebhookUrlService } from './webhook-url.service';

/**
 * The secret columns a rotation writes (docs/architecture.md §8): the new sealed secret becomes
 * current. Outside an overlap window the replaced secret signs on for {@link ROTATION_OVERLAP_MS};
 * inside one (an earlier rotation's previous secret still live) the previous secret and its
 * expiry are kept and the replaced one, never deployed as far as we can tell, is dropped.
 */
export function rotation(current: SealedSecrets, newSealed: string, now: Date): Pick<WebhookEndpoint, 'secretSealed' | 'previousSecretSealed' | 'previousSecretExpiresAt' | 'secretRotatedAt'> {
  const inWindow = current.previousSecretSealed !== null && current.previousSecretExpiresAt !== null && current.previousSecretExpiresAt.getTime() > now.getTime();
  return {
    secretSealed: newSealed,
    previousSecretSealed: inWindow ? current.previousSecretSealed : current.secretSealed,
    previousSecretExpiresAt: inWindow ? current.previousSecretExpiresAt : new Date(now.getTime() + ROTATION_OVERLAP_MS),
    secretRotatedAt: now,
  };
}

/** The organisation's webhook endpoint and its deliveries (docs/api.md Events 3–4, docs/architecture.md §8). */
@Injectable()
export class WebhooksService {
  private readonly logger = new Logger(WebhooksService.name);

  constructor(
    private readonly endpoints: WebhookEndpointsRepository,
    private readonly deliveries: WebhookDeliveriesRepository,
    private readonly outbox: OutboxRepository,
    private readonly secrets: WebhookSecrets,
    private readonly urls: WebhookUrlService,
    private readonly queue: DeliveryQueue,
    private readonly txHost: TransactionHost,
  ) {}

  /** @throws AppError not_found when the organisation has no endpoint yet. */
  async getEndpoint(principal: Principal): Promise<WebhookEndpointDto> {
    const endpoint = await this.endpoints.findEndpoint(principal.organizationId);
    if (!endpoint) throw WebhookErrors.endpointNotFound();
    return WebhooksMapper.endpoint(endpoint);
  }

  /**
   * Creates or replaces the endpoint. The `whsec_` secret is returned in plaintext only when it
   * is created (first PUT) or rotated (`rotateSecret`). After a rotation the secret it replaced
   * keeps signing for 24 h; a rotation inside that window replaces only the current secret, so
   * the secret from before the window keeps signing until the window ends (a retried rotation
   * never retires the secret the merchant runs; docs/decisions.md). `enabled: true` also clears
   * a 410-Gone or `failing` disable (and a new URL or re-enabling resets the failure streak), and
   * releases the deliveries held while the endpoint was disabled: they are
   * `pending` when this commits, and their jobs are enqueued after (a failed enqueue is left to
   * the worker's recovery pass). Concurrent PUTs serialise on the endpoint row.
   * @throws AppError invalid_request (details.param `url`, details.reason e.g. `private_address`)
   *   when the URL fails the SSRF guard (docs/architecture.md §8).
   */
  async putEndpoint(principal: Principal, input: PutWebhookEndpointDto): Promise<WebhookEndpointDto> {
    await this.urls.assertRegistrable(input.url, 'url');
    const organizationId = principal.organizationId;
    const enabled = input.enabled ?? true;
    const fields = { url: input.url, enabled, events: input.events ?? null, disabledReason: enabled ? null : ('disabled_by_merchant' as const) };
    const { dto, released } = await (this.txHost as TxHost).withTransaction(async () => {
      let secret: string | undefined;
      let existing = await this.endpoints.findEndpointForUpdate(organizationId);
      if (!existing) {
        secret = generateWebhookSecret();
        const created = Object.assign(new WebhookEndpoint(), { id: uuidv7(), organizationId, ...fields, secretSealed: this.secrets.seal(organizationId, secret) });
        if (await this.endpoints.insertEndpointIfAbsent(created)) return { dto: WebhooksMapper.endpoint((await this.endpoints.findEndpoint(organizationId))!, secret), released: [] };
        secret = undefined;
        existing = (await this.endpoints.findEndpointForUpdate(organizationId))!;
      }
      const patch: Partial<WebhookEndpoint> = { ...fields };
      // A new URL, or enabling again, starts the failure streak afresh (the five days of `failing`).
      if (existing.url !== input.url || (enabled && !existing.enabled)) patch.failingSince = null;
      if (input.rotateSecret) {
        secret = generateWebhookSecret();
        Object.assign(patch, rotation(existing, this.secrets.seal(organizationId, secret), new Date()));
      }
      await this.endpoints.updateEndpoint(existing.id, patch);
      const released = enabled ? await this.deliveries.releaseHeld(organizationId) : [];
      return { dto: WebhooksMapper.endpoint((await this.endpoints.findEndpoint(organizationId))!, secret), released };
    });
    if (released.length > 0) {
      try {
        await this.queue.enqueue(released.map((d) => ({ deliveryId: d.id, attempt: d.attempts })));
      } catch (err) {
        this.logger.warn({ err, deliveries: released.length }, 'held deliveries released but not enqueued; the worker recovery pass will pick them up');
      }
    }
    return dto;
  }

  /** Deliveries newest first, optionally filtered by `status` and `eventType` (docs/architecture.md §6 envelope). */
  async listDeliveries(principal: Principal, q: ListWebhookDeliveriesQueryDto): Promise<ListPage<WebhookDeliveryDto>> {
    const limit = q.limit ?? 10;
    const rows = await this.deliveries.listDeliveries(principal.organizationId, limit, q.starting_after, { status: q.status, eventType: q.eventType });
    return toPage(rows, limit, (d) => WebhooksMapper.delivery(d));
  }

  /**
   * "Send test event" (docs/decisions.md "Console"): a `ping` event (`data.object` =
   * `{object: "ping", message, url}`) to the organisation's endpoint, whatever its events filter,
   * through the normal delivery path: its event row (already relayed, so the outbox relay never
   * fans it out to a checkout URL) and its one `endpoint` delivery commit together, then the job
   * is enqueued; signing, attempts, retries and the deliveries log are those of any event.
   * @returns the delivery, `pending` until the worker sends it.
   * @throws AppError not_found when there is no endpoint; invalid_request 409 (reason
   *   `endpoint_disabled`) when it is disabled.
   */
  async sendTestEvent(principal: Principal): Promise<WebhookDeliveryDto> {
    const organizationId = principal.organizationId;
    const endpoint = await this.endpoints.findEndpoint(organizationId);
    if (!endpoint) throw WebhookErrors.endpointNotFound();
    if (!endpoint.enabled) throw WebhookErrors.endpointDisabled(endpoint.disabledReason);
    const eventId = uuidv7();
    const deliveryId = uuidv7();
    await (this.txHost as TxHost).withTransaction(Propagation.RequiresNew, async () => {
      await this.outbox.insertRelayed({
        id: eventId,
        organizationId,
        type: PING_EVENT_TYPE,
        data: { object: { object: 'ping', message: 'A test event sent from the console: your endpoint receives and verifies webhooks.', url: endpoint.url } },
      });
      await this.deliveries.insertDeliveries([{ id: deliveryId, eventId, organizationId, eventType: PING_EVENT_TYPE, target: 'endpoint', url: endpoint.url, status: 'pending', lastError: null }]);
    });
    try {
      await this.queue.enqueue([{ deliveryId, attempt: 0 }]);
    } catch (err) {
      this.logger.warn({ err, deliveryId }, 'test event committed but not enqueued; the worker recovery pass will pick it up');
    }
    return WebhooksMapper.delivery((await this.deliveries.findDelivery(organizationId, deliveryId))!);
  }

  /**
   * Manual retry (docs/architecture.md §8): one more attempt at once, with the same `webhook-id` and a fresh
   * timestamp and signature; the delivery shows `pending` until it runs. The re-arm commits on
   * its own before the job is enqueued, so the worker never sees the job before the row.
   * @throws AppError not_found for an unknown id or another organisation's delivery.
   * @throws AppError invalid_request 409 (reason `endpoint_disabled`) when the delivery targets
   *   the organisation endpoint (target `endpoint`) and it is disabled.
   */
  async retryDelivery(principal: Principal, id: string): Promise<WebhookDeliveryDto> {
    const organizationId = principal.organizationId;
    const delivery = await this.deliveries.findDelivery(organizationId, id);
    if (!delivery) throw WebhookErrors.deliveryNotFound();
    const endpoint = await this.endpoints.findEndpoint(organizationId);
    if (endpoint && delivery.target === 'endpoint' && !endpoint.enabled) throw WebhookErrors.endpointDisabled(endpoint.disabledReason);
    const rearmed = await (this.txHost as TxHost).withTransaction(Propagation.RequiresNew, () => this.deliveries.rearmDelivery(organizationId, id));
    if (!rearmed) throw WebhookErrors.deliveryNotFound();
    try {
      await this.queue.ensure({ deliveryId: id, attempt: rearmed.attempts }, { now: true });
    } catch (err) {
      this.logger.warn({ err, deliveryId: id }, 'manual retry not enqueued; the worker recovery pass will pick it up');
    }
    return WebhooksMapper.delivery(rearmed);
  }
}
