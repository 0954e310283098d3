import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';

/** A merchant organisation; owns credentials, checkout sessions and its webhook endpoint. */
@Entity('organizations')
export class Organization {
  @PrimaryColumn('uuid') id: string;
  @Column() name: string;
  @Column() handle: string;
  @Column('text', { name: 'payout_address', nullable: true }) payoutAddress: string | null;
  /** False for a console organisation whose payout address was named without its own signature (issue 28; buyer attribution skips it). */
  @Column('boolean', { name: 'payout_address_proven', default: true }) payoutAddressProven: boolean;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' }) updatedAt: Date;
}

/** A merchant (`bk_live_`) or agent (`bk_agent_live_`) API key; only its SHA-256 is stored. */
@Entity('api_keys')
export class ApiKey {
  @PrimaryColumn('uuid') id: string;
  @Column('uuid', { name: 'organization_id' }) organizationId: string;
  @Column('uuid', { name: 'agent_id', nullable: true }) agentId: string | null;
  @Column() kind: 'merchant' | 'agent';
  @Column({ name: 'display_prefix' }) displayPrefix: string;
  @Column('bytea', { name: 'secret_hash' }) secretHash: Buffer;
  @Column('text', { array: true }) scopes: string[];
  @Column('timestamptz', { name: 'revoked_at', nullable: true }) revokedAt: Date | null;
  /** When the key last authenticated a request, to the minute (docs/decisions.md "API key last used"). */
  @Column('timestamptz', { name: 'last_used_at', nullable: true }) lastUsedAt: Date | null;
  /** Who created the key: `console:<address>`, `operator` (CLI); null for keys from before it was recorded (docs/decisions.md "Agent owner consent"). */
  @Column('text', { name: 'created_by', nullable: true }) createdBy: string | null;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
}

/** An OAuth client (client-credentials grant); created by the operator CLI. */
@Entity('oauth_clients')
export class OAuthClient {
  @PrimaryColumn('uuid') id: string;
  @Column('uuid', { name: 'organization_id' }) organizationId: string;
  @Column({ name: 'client_id' }) clientId: string;
  @Column('bytea', { name: 'secret_hash' }) secretHash: Buffer;
  @Column('text', { array: true }) scopes: string[];
  @Column('timestamptz', { name: 'revoked_at', nullable: true }) revokedAt: Date | null;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
}

/** An issued `bat_` access token; only its SHA-256 is stored. */
@Entity('oauth_tokens')
export class OAuthToken {
  @PrimaryColumn('uuid') id: string;
  @Column('uuid', { name: 'oauth_client_id' }) oauthClientId: string;
  @Column('uuid', { name: 'organization_id' }) organizationId: string;
  @Column('bytea', { name: 'token_hash' }) tokenHash: Buffer;
  @Column('text', { array: true }) scopes: string[];
  @Column('timestamptz', { name: 'expires_at' }) expiresAt: Date;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
}

/** An owner address of an organisation (docs/architecture.md §19): the payout address at creation is the first. */
@Entity('organization_owners')
export class OrganizationOwner {
  @PrimaryColumn('uuid', { name: 'organization_id' }) organizationId: string;
  @PrimaryColumn('text') address: string;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
}
