import { Injectable, Logger } from '@nestjs/common';
import { v7 as uuidv7 } from 'uuid';
import type { Principal } from '../../common/auth/principal';
import { ListPage, toPage } from '../../common/http/list.dto';
import { Propagation, TransactionHost, TxHost } from '../../database/transaction';
import { generateWebhookSecret } from './delivery/webhook-signing';
import { ListWebhookDeliveriesQueryDto, WebhookDeliveryDto } from './dto/webhook-delivery.dto';
import { PutWebhookEndpointDto, WebhookEndpointDto } from './dto/webhook-endpoint.dto';
import { WebhookEndpoint } from './webhooks.entity';
import { WebhookErrors } from './webhooks.errors';
import { WebhooksMapper } from './webhooks.mapper';
import { DeliveryQueue } from './webhooks.queue';
import { WebhooksRepository } from './webhooks.repository';
import { ROTATION_OVERLAP_MS, WebhookSecrets } from './webhook-secrets.service';
import { WebhookUrlService } from './webhook-url.service';

/** The organisation's webhook endpoint and its deliveries (SPEC Events 3–4, DESIGN §8). */
@Injectable()
export class WebhooksService {
  private readonly logger = new Logger(WebhooksService.name);

  constructor(
    private readonly repo: WebhooksRepository,
    private readonly secrets: WebhookSecrets,
    private readonly urls: WebhookUrlService,
    private readonly queue: DeliveryQueue,
    private readonly txHost: TransactionHost,
  ) {}

  /** @throws AppError not_found when the organisation has no endpoint yet. */
  async getEndpoint(principal: Principal): Promise<WebhookEndpointDto> {
    const endpoint = await this.repo.findEndpoint(principal.organizationId);
    if (!endpoint) throw WebhookErrors.endpointNotFound();
    return WebhooksMapper.endpoint(endpoint);
  }

  /**
   * Creates or replaces the endpoint. The `whsec_` secret is returned in plaintext only when it
   * is created (first PUT) or rotated (`rotateSecret`); after a rotation the old secret keeps
   * signing for 24 h, and rotating again inside that window retires the oldest at once.
   * `enabled: true` also clears a 410-Gone disable.
   * @throws AppError invalid_request (details.param `url`, details.reason e.g. `private_address`)
   *   when the URL fails the SSRF guard (DESIGN §8).
   */
  async putEndpoint(principal: Principal, input: PutWebhookEndpointDto): Promise<WebhookEndpointDto> {
    await this.urls.assertRegistrable(input.url, 'url');
    const organizationId = principal.organizationId;
    const enabled = input.enabled ?? true;
    const fields = { url: input.url, enabled, events: input.events ?? null, disabledReason: enabled ? null : ('disabled_by_merchant' as const) };
    return (this.txHost as TxHost).withTransaction(async () => {
      let secret: string | undefined;
      let existing = await this.repo.findEndpointForUpdate(organizationId);
      if (!existing) {
        secret = generateWebhookSecret();
        const created = Object.assign(new WebhookEndpoint(), { id: uuidv7(), organizationId, ...fields, secretSealed: this.secrets.seal(organizationId, secret) });
        if (await this.repo.insertEndpointIfAbsent(created)) return WebhooksMapper.endpoint((await this.repo.findEndpoint(organizationId))!, secret);
        secret = undefined;
        existing = (await this.repo.findEndpointForUpdate(organizationId))!;
      }
      const patch: Partial<WebhookEndpoint> = { ...fields };
      if (input.rotateSecret) {
        secret = generateWebhookSecret();
        const now = Date.now();
        Object.assign(patch, {
          secretSealed: this.secrets.seal(organizationId, secret),
          previousSecretSealed: existing.secretSealed,
          previousSecretExpiresAt: new Date(now + ROTATION_OVERLAP_MS),
          secretRotatedAt: new Date(now),
        });
      }
      await this.repo.updateEndpoint(existing.id, patch);
      return WebhooksMapper.endpoint((await this.repo.findEndpoint(organizationId))!, secret);
    });
  }

  /** Deliveries newest first, optionally filtered by `status` and `eventType` (DESIGN §6 envelope). */
  async listDeliveries(principal: Principal, q: ListWebhookDeliveriesQueryDto): Promise<ListPage<WebhookDeliveryDto>> {
    const limit = q.limit ?? 10;
    const rows = await this.repo.listDeliveries(principal.organizationId, limit, q.starting_after, { status: q.status, eventType: q.eventType });
    return toPage(rows, limit, (d) => WebhooksMapper.delivery(d));
  }

  /**
   * Manual retry (DESIGN §8): one more attempt at once, with the same `webhook-id` and a fresh
   * timestamp and signature; the delivery shows `pending` until it runs. The re-arm commits on
   * its own before the job is enqueued, so the worker never sees the job before the row.
   * @throws AppError not_found for an unknown id or another organisation's delivery.
   * @throws AppError invalid_request 409 (reason `endpoint_disabled`) when the delivery targets
   *   the organisation endpoint and it is disabled.
   */
  async retryDelivery(principal: Principal, id: string): Promise<WebhookDeliveryDto> {
    const organizationId = principal.organizationId;
    const delivery = await this.repo.findDelivery(organizationId, id);
    if (!delivery) throw WebhookErrors.deliveryNotFound();
    const endpoint = await this.repo.findEndpoint(organizationId);
    if (endpoint && endpoint.url === delivery.url && !endpoint.enabled) throw WebhookErrors.endpointDisabled(endpoint.disabledReason);
    const rearmed = await (this.txHost as TxHost).withTransaction(Propagation.RequiresNew, () => this.repo.rearmDelivery(organizationId, id));
    if (!rearmed) throw WebhookErrors.deliveryNotFound();
    try {
      await this.queue.ensure({ deliveryId: id, attempt: rearmed.attempts }, { now: true });
    } catch (err) {
      this.logger.warn({ err, deliveryId: id }, 'manual retry not enqueued; the worker recovery pass will pick it up');
    }
    return WebhooksMapper.delivery(rearmed);
  }
}
