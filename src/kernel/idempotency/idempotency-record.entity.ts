import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

/** A finished request's outcome under an Idempotency-Key (docs/architecture.md §5); lives IDEMPOTENCY_TTL_HOURS. */
@Entity('idempotency_records')
export class IdempotencyRecord {
  @PrimaryColumn('uuid') id: string;
  @Column({ name: 'scope_hash' }) scopeHash: string;
  @Column({ name: 'idempotency_key' }) idempotencyKey: string;
  @Column('uuid', { name: 'organization_id' }) organizationId: string;
  @Column() method: string;
  @Column() path: string;
  @Column() fingerprint: string;
  @Column('int', { name: 'response_status' }) responseStatus: number;
  /** The response body as the JSON text first sent: text, not jsonb, because jsonb reorders keys and a replay must be byte-identical (docs/architecture.md §5). */
  @Column('text', { name: 'response_body', transformer: { to: (v: unknown) => JSON.stringify(v ?? null), from: (v: string) => JSON.parse(v) as unknown } })
  responseBody: unknown;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
  @Column('timestamptz', { name: 'expires_at' }) expiresAt: Date;
}
