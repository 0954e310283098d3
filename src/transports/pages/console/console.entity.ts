import { Column, CreateDateColumn, Entity, PrimaryColumn } from 'typeorm';

/** A Sign-In with Ethereum nonce (EIP-4361; docs/architecture.md §19): single use, 5 minutes. */
@Entity('console_nonces')
export class ConsoleNonce {
  @PrimaryColumn('text') nonce: string;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
  @Column('timestamptz', { name: 'expires_at' }) expiresAt: Date;
  @Column('timestamptz', { name: 'used_at', nullable: true }) usedAt: Date | null;
}

/** A server-side console session (docs/architecture.md §19): only the SHA-256 of its token is stored; revocable. */
@Entity('console_sessions')
export class ConsoleSession {
  @PrimaryColumn('uuid') id: string;
  @Column('bytea', { name: 'token_hash', unique: true }) tokenHash: Buffer;
  @Column('text') address: string;
  @Column('integer', { name: 'chain_id' }) chainId: number;
  @Column('text', { name: 'client_address', nullable: true }) clientAddress: string | null;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
  @Column('timestamptz', { name: 'expires_at' }) expiresAt: Date;
  @Column('timestamptz', { name: 'revoked_at', nullable: true }) revokedAt: Date | null;
}
