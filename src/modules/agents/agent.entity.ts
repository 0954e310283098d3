import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';

/** An AI agent of an organisation; agent keys act as it (docs/architecture.md §3). */
@Entity('agents')
export class Agent {
  @PrimaryColumn('uuid') id: string;
  @Column('uuid', { name: 'organization_id' }) organizationId: string;
  @Column() slug: string;
  @Column({ name: 'owner_address' }) ownerAddress: string;
  @Column() paused: boolean;
  @Column({ name: 'signer_enabled' }) signerEnabled: boolean;
  @Column('text', { nullable: true }) name: string | null;
  @Column('text', { name: 'signer_address', nullable: true }) signerAddress: string | null;
  @Column('text', { name: 'signer_key_sealed', nullable: true, select: false }) signerKeySealed: string | null;
  @Column('jsonb', { nullable: true }) policy: { [field: string]: string | string[] } | null;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' }) updatedAt: Date;
}
