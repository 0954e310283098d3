import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';

/** Delivery statuses (DESIGN §8). */
export const DELIVERY_STATUSES = ['pending', 'succeeded', 'retrying', 'failed'] as const;
/** One of {@link DELIVERY_STATUSES}. */
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** Why an endpoint stopped receiving: the merchant turned it off, or it answered 410 Gone. */
export type EndpointDisabledReason = 'disabled_by_merchant' | 'gone';

/**
 * The organisation's one webhook endpoint (SPEC Events 3). Signing secrets are stored sealed
 * with {@link SecretBox} (AES-256-GCM, aad = organisation id); `previousSecret` keeps signing
 * until `previousSecretExpiresAt` after a rotation (DESIGN §8). `events` null = every event.
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
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' }) updatedAt: Date;
}

/**
 * One event to one URL (DESIGN §8), unique on (event, url). The row is the record of delivery;
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
