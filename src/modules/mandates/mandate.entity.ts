import { Column, Entity, PrimaryColumn } from 'typeorm';
import { bigintTransformer } from '../../database/bigint.transformer';

/** Stored credential formats of a mandate (docs/architecture.md §14). */
export type MandateFormat = 'eip712' | 'sd-jwt';

/**
 * An AP2 intent mandate of an agent (docs/architecture.md §14): terms signed by the agent's owner,
 * amounts in USDC base units, payees lower-cased (handles, slugs or addresses), the verified
 * credential verbatim and its single-use nonce. Usage is never stored (docs/architecture.md §13).
 */
@Entity('mandates')
export class Mandate {
  @PrimaryColumn('uuid') id: string;
  @Column('uuid', { name: 'agent_id' }) agentId: string;
  @Column('uuid', { name: 'organization_id' }) organizationId: string;
  @Column('text', { array: true }) payees: string[];
  @Column('numeric', { name: 'max_amount_per_payment', precision: 78, scale: 0, transformer: bigintTransformer }) maxAmountPerPayment: bigint;
  @Column('numeric', { name: 'total_amount', precision: 78, scale: 0, transformer: bigintTransformer }) totalAmount: bigint;
  @Column('timestamptz', { name: 'expires_at' }) expiresAt: Date;
  @Column('text') description: string;
  @Column('text') format: MandateFormat;
  @Column('text') nonce: string;
  @Column('jsonb') credential: Record<string, unknown>;
  @Column('timestamptz', { name: 'revoked_at', nullable: true }) revokedAt: Date | null;
  @Column('timestamptz', { name: 'created_at' }) createdAt: Date;
  @Column('timestamptz', { name: 'updated_at' }) updatedAt: Date;
}
