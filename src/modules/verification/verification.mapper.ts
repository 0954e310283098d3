import { formatAmount } from '@lib/money';
import type { VerificationDto, WalletCheckDto } from './dto/verification.dto';
import type { OrganizationVerification } from './verification.entity';
import { overallStatus, VerificationStatus, walletStatus } from './verification.state';

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** Where the wallet check is paid: chain and token, for the response. */
export interface WalletChainInfo {
  chainId: number;
  token: string;
}

/** The wallet check as the API shows it; a check reset by a payout address change renders empty. */
export function toWalletDto(record: OrganizationVerification | null, payoutAddress: string | null, chain: WalletChainInfo, now: Date): WalletCheckDto {
  const status = record ? walletStatus({ status: record.walletStatus, address: record.walletAddress, expiresAt: record.walletExpiresAt }, payoutAddress, now) : 'unverified';
  if (!record || status === 'unverified') {
    return { status: 'unverified', address: payoutAddress, amount: null, payTo: null, token: null, chainId: null, txHash: null, createdAt: null, expiresAt: null, verifiedAt: null };
  }
  return {
    status,
    address: record.walletAddress,
    amount: record.walletAmount === null ? null : formatAmount(record.walletAmount),
    payTo: record.walletPayTo,
    token: chain.token,
    chainId: chain.chainId,
    txHash: record.walletTxHash,
    createdAt: iso(record.walletCreatedAt),
    expiresAt: iso(record.walletExpiresAt),
    verifiedAt: iso(record.walletVerifiedAt),
  };
}

/** The overall status of a record (absent = unverified). */
export function statusOf(record: OrganizationVerification | null, payoutAddress: string | null, now: Date): VerificationStatus {
  if (!record) return 'unverified';
  const wallet = walletStatus({ status: record.walletStatus, address: record.walletAddress, expiresAt: record.walletExpiresAt }, payoutAddress, now);
  return overallStatus(record.identityStatus, wallet);
}

/** GET /api/v1/verification (docs/architecture.md §12). */
export function toVerificationDto(record: OrganizationVerification | null, payoutAddress: string | null, chain: WalletChainInfo, now: Date): VerificationDto {
  return {
    status: statusOf(record, payoutAddress, now),
    wallet: toWalletDto(record, payoutAddress, chain, now),
    identity: {
      provider: record?.identityProvider ?? null,
      status: record?.identityStatus ?? 'unverified',
      verificationUrl: record?.identityStatus === 'pending' ? (record.identityUrl ?? null) : null,
      reference: record?.identityReference ?? null,
      lastError: record?.identityLastError ?? null,
      expiresAt: record?.identityStatus === 'pending' ? iso(record.identityExpiresAt) : null,
    },
    updatedAt: iso(record?.updatedAt ?? null),
  };
}
