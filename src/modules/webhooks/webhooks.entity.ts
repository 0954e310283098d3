import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';
import { WEBHOOK_EVENTS } from '../../common/outbox/webhook-event';

/**
 * Type of the test event ("send test event", docs/decisions.md "Console"): not one of SPEC's event
 * types and never written by a state change, so a receiver that switches on `type` ignores it.
 */
export const PING_EVENT_TYPE = 'ping';

/** Event types a delivery can carry: SPEC's events and the test `ping`. */
export const DELIVERY_EVENT_TYPES: readonly string[] = [...WEBHOOK_EVENTS, PING_EVENT_TYPE];

/**
 * Delivery statuses (docs/architecture.md §8): `pending` (due now), `retrying` (due at
 * `nextAttemptAt`), `succeeded`, `failed` (no attempts left, or nothing to sign with), and
 * `held`: an `endpoint` delivery waiting while the organisation endpoint is disabled; nothing is
 * sent until a PUT enables the endpoint, which makes every held delivery `pending` again.
 */
export const DELIVERY_STATUSES = ['pending', 'succeeded', 'retrying', 'failed', 'held'] as const;
/** One of {@link DELIVERY_STATUSES}. */
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/**
 * What a delivery goes to: `endpoint` = the organisation's endpoint as it is at each attempt
 * (URL, secret, enabled), `checkout` = a checkout session's own fixed `webhookUrl`.
 */
export const DELIVERY_TARGETS = ['endpoint', 'checkout'] as const;
/** One of {@link DELIVERY_TARGETS}. */
export type DeliveryTarget = (typeof DELIVERY_TARGETS)[number];

/**
 * Why an endpoint stopped receiving: the merchant turned it off, it answered 410 Gone, or every
 * attempt failed for {@link FAILING_DISABLE_AFTER_MS} (docs/decisions.md).
 */
export const ENDPOINT_DISABLED_REASONS = ['disabled_by_merchant', 'gone', 'failing'] as const;
/** One of {@link ENDPOINT_DISABLED_REASONS}. */
export type EndpointDisabledReason = (typeof ENDPOINT_DISABLED_REASONS)[number];

/** How long an endpoint may fail every attempt before it is disabled as `failing` (5 days, as Svix). */
export const FAILING_DISABLE_AFTER_MS = 5 * 24 * 3600 * 1000;

/**
 * The organisation's one webhook endpoint (docs/api.md Events 3). Signing secrets are stored
 * sealed with {@link SecretBox} (AES-256-GCM, aad = organisation id); `previousSecret` keeps
 * signing until `previousSecretExpiresAt` after a rotation, and a rotation inside that window
 * replaces only the current secret (docs/architecture.md §8, docs/decisions.md). `events` null =
 * every event.
 */
@Entity('webhook_endpoints')
export class WebhookEndpoint {
  @PrimaryColumn('uuid') id: string;
  @Column('uuid', { name: 'organization_id' }) organizationId: string;
  @Column('text') url: string;
  @Column('boolean') enabled: boolean;
  @Column('text', { array: true, nullable: true }) events: string[] | null;
  @Column('text', { name: 'disabled_reason', nullable: true }) disabledReason: EndpointDisabledReason | null;
  @Column('text', { name: 'secret_sealed' }) secretSealed: string;
  @Column('text', { name: 'previous_secret_sealed', nullable: true }) previousSecretSealed: string | null;
  @Column('timestamptz', { name: 'previous_secret_expires_at', nullable: true }) previousSecretExpiresAt: Date | null;
  @Column('timestamptz', { name: 'secret_rotated_at', nullable: true }) secretRotatedAt: Date | null;
  /** The first failed attempt since the last success at this URL; null while healthy. */
  @Column('timestamptz', { name: 'failing_since', nullable: true }) failingSince: Date | null;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' }) updatedAt: Date;
}

/**
 * One event to one target (docs/architecture.md §8), unique on (event, target); `url` is the URL
 * attempted last (for an `endpoint` delivery it follows a replaced endpoint). The row is the record of delivery;
 * a BullMQ job only triggers the next attempt. `attempts` counts finished attempts;
 * `maxAttempts` grows by one per manual retry; `leaseToken`/`leaseExpiresAt` stop two workers
 * sending the same attempt at once.
 */
@Entity('webhook_deliveries')
export class WebhookDelivery {
  @PrimaryColumn('uuid') id: string;
  @Column('uuid', { name: 'event_id' }) eventId: string;
  @Column('uuid', { name: 'organization_id' }) organizationId: string;
  @Column('text', { name: 'event_type' }) eventType: string;
  @Column('text') target: DeliveryTarget;
  @Column('text') url: string;
  @Column('text') status: DeliveryStatus;
  @Column('integer') attempts: number;
  @Column('integer', { name: 'max_attempts' }) maxAttempts: number;
  @Column('integer', { name: 'response_status', nullable: true }) responseStatus: number | null;
  @Column('text', { name: 'response_body', nullable: true }) responseBody: string | null;
  @Column('text', { name: 'last_error', nullable: true }) lastError: string | null;
  @Column('timestamptz', { name: 'next_attempt_at', nullable: true }) nextAttemptAt: Date | null;
  @Column('timestamptz', { name: 'last_attempt_at', nullable: true }) lastAttemptAt: Date | null;
  @Column('timestamptz', { name: 'delivered_at', nullable: true }) deliveredAt: Date | null;
  @Column('uuid', { name: 'lease_token', nullable: true }) leaseToken: string | null;
  @Column('timestamptz', { name: 'lease_expires_at', nullable: true }) leaseExpiresAt: Date | null;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' }) updatedAt: Date;
}
