import { Column, CreateDateColumn, Entity, PrimaryColumn, UpdateDateColumn } from 'typeorm';
import { bigintTransformer } from '../../database/bigint.transformer';
import type { CheckStatus, IdentityProviderName } from './verification.state';

/**
 * One organisation's verification record (docs/architecture.md §12): the identity check through a
 * provider and the wallet check (a USDC payment from the payout address). No row = nothing started.
 * Wallet amounts are USDC base units; `walletAfterBlock`/`walletChainDeadline` are the payment
 * window in the chain's own clock (block number after which, unix seconds until which).
 */
@Entity('organization_verifications')
export class OrganizationVerification {
  @PrimaryColumn('uuid', { name: 'organization_id' }) organizationId: string;
  @Column('text', { name: 'identity_status' }) identityStatus: CheckStatus;
  @Column('text', { name: 'identity_provider', nullable: true }) identityProvider: IdentityProviderName | null;
  @Column('text', { name: 'identity_reference', nullable: true }) identityReference: string | null;
  @Column('text', { name: 'identity_url', nullable: true }) identityUrl: string | null;
  @Column('timestamptz', { name: 'identity_expires_at', nullable: true }) identityExpiresAt: Date | null;
  @Column('text', { name: 'identity_provider_status', nullable: true }) identityProviderStatus: string | null;
  @Column('text', { name: 'identity_last_error', nullable: true }) identityLastError: string | null;
  @Column('text', { name: 'identity_decided_by', nullable: true }) identityDecidedBy: 'provider' | 'operator' | null;
  @Column('text', { name: 'wallet_status' }) walletStatus: Exclude<CheckStatus, 'rejected'>;
  @Column('text', { name: 'wallet_address', nullable: true }) walletAddress: string | null;
  @Column('numeric', { name: 'wallet_amount', precision: 78, scale: 0, nullable: true, transformer: bigintTransformer }) walletAmount: bigint | null;
  @Column('text', { name: 'wallet_pay_to', nullable: true }) walletPayTo: string | null;
  @Column('timestamptz', { name: 'wallet_created_at', nullable: true }) walletCreatedAt: Date | null;
  @Column('timestamptz', { name: 'wallet_expires_at', nullable: true }) walletExpiresAt: Date | null;
  @Column('bigint', { name: 'wallet_after_block', nullable: true, transformer: bigintTransformer }) walletAfterBlock: bigint | null;
  @Column('bigint', { name: 'wallet_chain_deadline', nullable: true, transformer: bigintTransformer }) walletChainDeadline: bigint | null;
  @Column('text', { name: 'wallet_tx_hash', nullable: true }) walletTxHash: string | null;
  @Column('integer', { name: 'wallet_log_index', nullable: true }) walletLogIndex: number | null;
  @Column('timestamptz', { name: 'wallet_verified_at', nullable: true }) walletVerifiedAt: Date | null;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz' }) updatedAt: Date;
}

/** A USDC transfer accepted as some organisation's wallet check; (txHash, logIndex) verifies one organisation only. */
@Entity('verification_wallet_payments')
export class VerificationWalletPayment {
  @PrimaryColumn('text', { name: 'tx_hash' }) txHash: string;
  @PrimaryColumn('integer', { name: 'log_index' }) logIndex: number;
  @Column('uuid', { name: 'organization_id' }) organizationId: string;
  @Column('text', { name: 'from_address' }) fromAddress: string;
  @Column('text', { name: 'to_address' }) toAddress: string;
  @Column('numeric', { precision: 78, scale: 0, transformer: bigintTransformer }) amount: bigint;
  @Column('bigint', { name: 'block_number', transformer: bigintTransformer }) blockNumber: bigint;
  @Column('timestamptz', { name: 'block_time' }) blockTime: Date;
  @CreateDateColumn({ name: 'created_at', type: 'timestamptz' }) createdAt: Date;
}
