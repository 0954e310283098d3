import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

/**
 * A transactional-outbox row (docs/architecture.md §8): `{id, type, createdAt, data: {object}}`, written in the
 * same transaction as the state change; `relayedAt` is set once the worker has made its
 * deliveries. `extraTargetUrl` is the checkout's own webhookUrl, delivered to beside the
 * organisation's endpoint. `traceparent` is the W3C trace context of the transaction that wrote
 * it (null when nothing was traced), continued by the relay and the deliveries (DESIGN §20).
 */
@Entity('outbox_events')
export class OutboxEvent {
  @PrimaryColumn('uuid') id: string;
  @Column('uuid', { name: 'organization_id' }) organizationId: string;
  @Column() type: string;
  @Column('jsonb') data: { object: Record<string, unknown> };
  @Column('text', { name: 'extra_target_url', nullable: true }) extraTargetUrl: string | null;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
  @Column('timestamptz', { name: 'relayed_at', nullable: true }) relayedAt: Date | null;
  @Column('text', { nullable: true }) traceparent: string | null;
}
