import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';
import { bigintTransformer } from '../../database/bigint.transformer';

/** A catalogue item (docs/architecture.md §11); `amountUnits` is USDC base units. Archived by `active = false`. */
@Entity('offerings')
export class Offering {
  @PrimaryColumn('uuid') id: string;
  @Column('uuid', { name: 'organization_id' }) organizationId: string;
  @Column('text') name: string;
  @Column('text', { nullable: true }) description: string | null;
  @Column('numeric', { name: 'amount_units', transformer: bigintTransformer }) amountUnits: bigint;
  @Column('text', { name: 'escrow_template_id' }) escrowTemplateId: string;
  @Column('boolean') active: boolean;
  @Column('jsonb', { nullable: true }) metadata: Record<string, unknown> | null;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' }) updatedAt: Date;
}
