import { WebhookDeliveryDto } from './dto/webhook-delivery.dto';
import { WebhookEndpointDto } from './dto/webhook-endpoint.dto';
import { WebhookDelivery, WebhookEndpoint } from './webhooks.entity';

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** Renders webhook resources as the API shows them (explicit field lists, docs/architecture.md, Conventions 5). */
export const WebhooksMapper = {
  /** `secret` is included only when given (creation and rotation responses). */
  endpoint(e: WebhookEndpoint, secret?: string): WebhookEndpointDto {
    return {
      id: e.id,
      url: e.url,
      enabled: e.enabled,
      events: e.events,
      disabledReason: e.disabledReason,
      failingSince: iso(e.failingSince),
      ...(secret ? { secret } : {}),
      secretRotatedAt: iso(e.secretRotatedAt),
      previousSecretExpiresAt: e.previousSecretExpiresAt && e.previousSecretExpiresAt.getTime() > Date.now() ? e.previousSecretExpiresAt.toISOString() : null,
      createdAt: e.createdAt.toISOString(),
      updatedAt: e.updatedAt.toISOString(),
    };
  },

  delivery(d: WebhookDelivery): WebhookDeliveryDto {
    return {
      id: d.id,
      eventId: d.eventId,
      eventType: d.eventType,
      target: d.target,
      url: d.url,
      status: d.status,
      attempts: d.attempts,
      responseStatus: d.responseStatus,
      responseBody: d.responseBody,
      lastError: d.lastError,
      nextAttemptAt: iso(d.nextAttemptAt),
      lastAttemptAt: iso(d.lastAttemptAt),
      deliveredAt: iso(d.deliveredAt),
      createdAt: d.createdAt.toISOString(),
      updatedAt: d.updatedAt.toISOString(),
    };
  },
};
