import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

/** A finished request's outcome under an Idempotency-Key (DESIGN §5); lives IDEMPOTENCY_TTL_HOURS. */
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
  @Column('jsonb', { name: 'response_body' }) responseBody: unknown;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
  @Column('timestamptz', { name: 'expires_at' }) expiresAt: Date;
}
