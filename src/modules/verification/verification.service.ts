import { Injectable } from '@nestjs/common';
import { getAddress, type Wallet } from 'ethers';
import { parseAmount } from '@lib/money';
import { randomInt } from 'node:crypto';
import { AppError } from '../../common/errors/app-error';
import { AppConfig } from '../../config/app-config';
import { TransactionHost, TxHost } from '../../database/transaction';
import { OrgsService } from '../orgs/orgs.service';
import { VerificationSnapshot, VerificationSnapshotSource } from '../orgs/verification-snapshot.port';
import type { VerificationDto, VerificationStartDto, WalletCheckDto } from './dto/verification.dto';
import { CallbackHeaders, IdentityProvider } from './identity-provider';
import { SandboxIdentityProvider, SandboxOutcome } from './sandbox-identity.provider';
import { VerificationChain } from './verification-chain.service';
import { OrganizationVerification, VerificationWalletPayment } from './verification.entity';
import { statusOf, toVerificationDto, toWalletDto, WalletChainInfo } from './verification.mapper';
import { VerificationRepository } from './verification.repository';
import {
  applyIdentityOutcome,
  applyOperatorDecision,
  IDENTITY_START_FROM,
  IdentityCheck,
  IdentityProviderName,
  matchWalletTransfer,
  OperatorDecision,
  TransferLog,
  WALLET_AMOUNT_MIN,
  WALLET_AMOUNT_SPAN,
  WALLET_CHECK_TTL_SECONDS,
  WALLET_CHECKOUT_FROM,
  WALLET_CONFIRM_FROM,
  walletStatus,
} from './verification.state';

/** A wallet payment proven on chain, ready for {@link VerificationService.recordWalletPayment}. */
export type WalletProof =
  | { kind: 'already_verified' }
  | {
      kind: 'proven';
      /** The issued check it pays (its amount and creation time), so the write can tell if it changed meanwhile. */
      issued: { amount: bigint; createdAt: number; address: string };
      txHash: string;
      log: TransferLog;
      blockNumber: bigint;
      blockTime: Date;
    };

/** The sandbox page's view of a session. */
export interface SandboxSessionView {
  reference: string;
  organizationName: string;
  status: 'open' | 'decided' | 'expired';
  identityStatus: string;
  expiresAt: Date | null;
}

/**
 * Business verification (docs/architecture.md §12): one record per organisation with a wallet
 * check (an exact USDC payment from the payout address to `VERIFICATION_ADDRESS`, verified on
 * chain) and an identity check (through `IDENTITY_PROVIDER`), and the `kyb_rejected` gate other
 * modules call. Chain and provider calls always run before the short transaction that writes.
 */
@Injectable()
export class VerificationService extends VerificationSnapshotSource {
  constructor(
    private readonly repo: VerificationRepository,
    private readonly orgs: OrgsService,
    private readonly chain: VerificationChain,
    private readonly provider: IdentityProvider,
    private readonly config: AppConfig,
    private readonly txHost: TransactionHost,
  ) {
    super();
  }

  private get chainInfo(): WalletChainInfo {
    return { chainId: this.config.env.CHAIN_ID, token: getAddress(this.config.env.USDC_ADDRESS) };
  }

  private tx<T>(fn: () => Promise<T>): Promise<T> {
    return (this.txHost as TxHost).withTransaction(fn);
  }

  private async payoutAddress(organizationId: string): Promise<string | null> {
    const org = await this.orgs.getOrganization(organizationId);
    if (!org) throw AppError.notFound('organization');
    return org.payoutAddress;
  }

  /**
   * The gate (docs/architecture.md §12): a rejected organisation may not create checkouts, send
   * invoices, pay or fund agent escrows, nor write its verification, until the operator reopens it.
   * @throws AppError 403 kyb_rejected.
   */
  async assertNotRejected(organizationId: string): Promise<void> {
    if ((await this.repo.identityStatus(organizationId)) === 'rejected') throw kybRejected();
  }

  /** `GET /me`'s snapshot: the overall status. */
  async snapshot(organizationId: string): Promise<VerificationSnapshot> {
    const [record, payout] = await Promise.all([this.repo.find(organizationId), this.payoutAddress(organizationId)]);
    return { status: statusOf(record, payout, new Date()) };
  }

  /** GET /api/v1/verification. */
  async get(organizationId: string): Promise<VerificationDto> {
    const [record, payout] = await Promise.all([this.repo.find(organizationId), this.payoutAddress(organizationId)]);
    return toVerificationDto(record, payout, this.chainInfo, new Date());
  }

  /**
   * POST /api/v1/verification/checkout: issues the wallet check, an exact amount of 1.000000–1.999999
   * USDC (random micro-units) from the payout address to `VERIFICATION_ADDRESS`, open 90 minutes;
   * while one is open, returns it. Reads the chain head first (the window in chain terms), then
   * writes under the record's row lock, so concurrent calls return one check.
   * @throws AppError 403 kyb_rejected; 409 invalid_request `reason: "no_payout_address"`, or
   *   `invalid_state` when the wallet check already passed.
   */
  async checkout(organizationId: string): Promise<WalletCheckDto> {
    return this.issueWalletCheck(organizationId, await this.walletCheckHead(organizationId));
  }

  /**
   * The network half of {@link checkout} (no transaction held, docs/architecture.md §5): the open
   * check when there is one, else the chain head the new check's window starts from.
   */
  async walletCheckHead(organizationId: string): Promise<{ open: WalletCheckDto } | { head: Awaited<ReturnType<VerificationChain['head']>> }> {
    const open = await this.openWalletCheck(organizationId);
    if (open.dto) return { open: open.dto };
    return { head: await this.chain.head() };
  }

  /** The transactional half of {@link checkout}: issues the check under the record's row lock. */
  async issueWalletCheck(organizationId: string, prepared: Awaited<ReturnType<VerificationService['walletCheckHead']>>): Promise<WalletCheckDto> {
    if ('open' in prepared) return prepared.open;
    const head = prepared.head;
    return this.tx(async () => {
      const payout = await this.payoutAddress(organizationId);
      const record = await this.repo.lockOrCreate(organizationId);
      const now = new Date();
      const current = this.checkWalletIssuable(record, payout, now);
      if (current === 'pending') return toWalletDto(record, payout, this.chainInfo, now);
      Object.assign(record, {
        walletStatus: 'pending',
        walletAddress: payout,
        walletAmount: WALLET_AMOUNT_MIN + BigInt(randomInt(0, WALLET_AMOUNT_SPAN)),
        walletPayTo: getAddress(this.config.env.VERIFICATION_ADDRESS),
        walletCreatedAt: now,
        walletExpiresAt: new Date(now.getTime() + WALLET_CHECK_TTL_SECONDS * 1000),
        walletAfterBlock: head.number,
        walletChainDeadline: head.timestamp + BigInt(WALLET_CHECK_TTL_SECONDS),
        walletTxHash: null,
        walletLogIndex: null,
        walletVerifiedAt: null,
      } satisfies Partial<OrganizationVerification>);
      return toWalletDto(await this.repo.save(record), payout, this.chainInfo, now);
    });
  }

  /** The open wallet check, read without a lock (no chain call needed then), or the refusal. */
  private async openWalletCheck(organizationId: string): Promise<{ dto?: WalletCheckDto }> {
    const [record, payout] = await Promise.all([this.repo.find(organizationId), this.payoutAddress(organizationId)]);
    const now = new Date();
    const current = this.checkWalletIssuable(record, payout, now);
    return current === 'pending' ? { dto: toWalletDto(record, payout, this.chainInfo, now) } : {};
  }

  private checkWalletIssuable(record: OrganizationVerification | null, payout: string | null, now: Date) {
    if (record?.identityStatus === 'rejected') throw kybRejected();
    if (!payout) throw new AppError('invalid_request', 'Set a payout address first: the wallet check pays from it', { reason: 'no_payout_address' }, 409);
    const current = record ? walletStatus({ status: record.walletStatus, address: record.walletAddress, expiresAt: record.walletExpiresAt }, payout, now) : 'unverified';
    if (!WALLET_CHECKOUT_FROM.includes(current)) throw AppError.invalidState('wallet check', current, WALLET_CHECKOUT_FROM);
    return current;
  }

  /**
   * POST /api/v1/verification/confirm: {@link proveWalletPayment} (reads and the chain, no
   * transaction) then {@link recordWalletPayment} (one short transaction).
   */
  async confirm(organizationId: string, txHash: string): Promise<VerificationDto> {
    const proof = await this.proveWalletPayment(organizationId, txHash);
    return this.recordWalletPayment(organizationId, proof);
  }

  /**
   * The read-and-verify half of confirm; opens no transaction and holds no lock, so it can run
   * before any (docs/architecture.md §5). The USDC `Transfer` log must go from the payout address
   * to `VERIFICATION_ADDRESS` for exactly the amount, in a block after the check was issued and no
   * later than its deadline (chain clock).
   * @throws AppError 403 kyb_rejected; 409 `invalid_state` when no check is issued; 400
   *   invalid_request `details.reason` not_found | failed | no_transfer | wrong_recipient |
   *   wrong_sender | wrong_amount | too_early | too_late; 409 `reason: "pending"` (unmined).
   */
  async proveWalletPayment(organizationId: string, txHash: string): Promise<WalletProof> {
    const hash = txHash.toLowerCase();
    const [record, payout] = await Promise.all([this.repo.find(organizationId), this.payoutAddress(organizationId)]);
    if (record?.identityStatus === 'rejected') throw kybRejected();
    const now = new Date();
    const current = record ? walletStatus({ status: record.walletStatus, address: record.walletAddress, expiresAt: record.walletExpiresAt }, payout, now) : 'unverified';
    if (current === 'verified' && record?.walletTxHash === hash) return { kind: 'already_verified' };
    if (!record || !WALLET_CONFIRM_FROM.includes(current)) throw AppError.invalidState('wallet check', current, WALLET_CONFIRM_FROM);
    const mined = await this.chain.usdcTransfers(hash);
    const match = matchWalletTransfer(
      mined.transfers,
      { number: BigInt(mined.blockNumber), timestamp: BigInt(mined.blockTimestamp) },
      { from: record.walletAddress!, payTo: record.walletPayTo!, amount: record.walletAmount!, afterBlock: record.walletAfterBlock!, chainDeadline: record.walletChainDeadline! },
    );
    if ('reason' in match) {
      throw new AppError('invalid_request', `Transaction ${hash} does not pay this wallet check: ${match.message}`, {
        reason: match.reason,
        txHash: hash,
        fields: [{ param: 'txHash', message: match.message }],
      });
    }
    return {
      kind: 'proven',
      issued: { amount: record.walletAmount!, createdAt: record.walletCreatedAt!.getTime(), address: record.walletAddress! },
      txHash: hash,
      log: match.log,
      blockNumber: BigInt(mined.blockNumber),
      blockTime: new Date(mined.blockTimestamp * 1000),
    };
  }

  /**
   * The write half of confirm, one short transaction under the record's row lock: claims the
   * (txHash, logIndex) for this organisation and marks the wallet check verified. Re-confirming
   * the hash already accepted here answers the record again.
   * @throws AppError 403 kyb_rejected; 409 `invalid_state` when the check changed meanwhile; 400
   *   `reason: "tx_already_used"` when another organisation (or an earlier check) holds the transfer.
   */
  recordWalletPayment(organizationId: string, proof: WalletProof): Promise<VerificationDto> {
    return this.tx(async () => {
      const payout = await this.payoutAddress(organizationId);
      const record = await this.repo.lockOrCreate(organizationId);
      if (record.identityStatus === 'rejected') throw kybRejected();
      const now = new Date();
      if (proof.kind === 'already_verified') return toVerificationDto(record, payout, this.chainInfo, now);
      const current = walletStatus({ status: record.walletStatus, address: record.walletAddress, expiresAt: record.walletExpiresAt }, payout, now);
      if (current === 'verified' && record.walletTxHash === proof.txHash) return toVerificationDto(record, payout, this.chainInfo, now);
      const unchanged =
        record.walletAmount === proof.issued.amount && record.walletCreatedAt?.getTime() === proof.issued.createdAt && record.walletAddress === proof.issued.address;
      if (!WALLET_CONFIRM_FROM.includes(current) || !unchanged) {
        throw AppError.invalidState('wallet check', unchanged ? current : 'reissued', WALLET_CONFIRM_FROM);
      }
      const holder = await this.repo.claimPayment(
        Object.assign(new VerificationWalletPayment(), {
          txHash: proof.txHash,
          logIndex: proof.log.logIndex,
          organizationId,
          fromAddress: proof.log.from,
          toAddress: proof.log.to,
          amount: proof.log.value,
          blockNumber: proof.blockNumber,
          blockTime: proof.blockTime,
        }),
      );
      if (holder !== null) {
        throw new AppError('invalid_request', `Transaction ${proof.txHash} already verified a wallet check`, {
          reason: 'tx_already_used',
          txHash: proof.txHash,
          fields: [{ param: 'txHash', message: 'was already used for a verification' }],
        });
      }
      Object.assign(record, { walletStatus: 'verified', walletTxHash: proof.txHash, walletLogIndex: proof.log.logIndex, walletVerifiedAt: now });
      return toVerificationDto(await this.repo.save(record), payout, this.chainInfo, now);
    });
  }

  /**
   * POST /api/v1/verification/start: a new session with the identity provider (a new URL per
   * call until decided); callbacks of earlier sessions are then ignored. The provider is called
   * before the transaction that records the session.
   * @throws AppError 403 kyb_rejected; 409 `invalid_state` when the identity check already passed.
   */
  async startIdentity(organizationId: string): Promise<VerificationStartDto> {
    return this.recordIdentitySession(organizationId, await this.createIdentitySession(organizationId));
  }

  /**
   * The network half of {@link startIdentity} (no transaction held): a new session with the
   * provider. Twins may each create one; only the one recorded last is honoured.
   */
  async createIdentitySession(organizationId: string): Promise<Awaited<ReturnType<IdentityProvider['createSession']>>> {
    const before = await this.repo.find(organizationId);
    this.checkStartable(before?.identityStatus ?? 'unverified');
    return this.provider.createSession(organizationId);
  }

  /** The transactional half of {@link startIdentity}: records the session under the row lock. */
  async recordIdentitySession(organizationId: string, session: Awaited<ReturnType<IdentityProvider['createSession']>>): Promise<VerificationStartDto> {
    return this.tx(async () => {
      const record = await this.repo.lockOrCreate(organizationId);
      this.checkStartable(record.identityStatus);
      Object.assign(record, {
        identityStatus: 'pending',
        identityProvider: this.provider.name,
        identityReference: session.reference,
        identityUrl: session.storeUrl ? session.url : null,
        identityExpiresAt: session.expiresAt,
        identityProviderStatus: session.providerStatus,
        identityLastError: null,
        identityDecidedBy: null,
      } satisfies Partial<OrganizationVerification>);
      await this.repo.save(record);
      return { verificationUrl: session.url, expiresAt: session.expiresAt.toISOString() };
    });
  }

  private checkStartable(status: OrganizationVerification['identityStatus']): void {
    if (status === 'rejected') throw kybRejected();
    if (!IDENTITY_START_FROM.includes(status)) throw AppError.invalidState('identity check', status, IDENTITY_START_FROM);
  }

  /**
   * A provider's callback (`POST /api/v1/verification/providers/{provider}/webhook`, and the
   * sandbox page): the signature is checked and the provider read first, then one transaction
   * applies the outcome to the organisation whose current session it names.
   * @returns whether it changed the identity check.
   * @throws AppError not_found for a provider other than `IDENTITY_PROVIDER`; AppError 400
   *   `reason: "bad_signature"` (nothing changes).
   */
  async handleProviderCallback(provider: string, rawBody: Buffer, headers: CallbackHeaders): Promise<{ received: true; applied: boolean }> {
    if (provider !== this.provider.name) throw new AppError('not_found', 'No such route');
    const outcome = await this.provider.parseCallback(rawBody, headers);
    if (!outcome) return { received: true, applied: false };
    return this.tx(async () => {
      const record = await this.repo.findBySessionForUpdate(outcome.provider, outcome.reference);
      if (!record) return { received: true as const, applied: false };
      const result = applyIdentityOutcome(identityOf(record), outcome);
      if ('ignored' in result) return { received: true as const, applied: false };
      await this.repo.save(Object.assign(record, fromIdentity(result.next)));
      return { received: true as const, applied: true };
    });
  }

  /**
   * `verification:decide --org ID --identity approved|declined|reopen` (operator CLI only): sets
   * the identity check from any state; `reopen` clears it to `unverified`.
   * @throws AppError not_found for an unknown organisation.
   */
  async decide(organizationId: string, decision: OperatorDecision): Promise<VerificationDto> {
    return this.tx(async () => {
      const payout = await this.payoutAddress(organizationId);
      const record = await this.repo.lockOrCreate(organizationId);
      Object.assign(record, fromIdentity(applyOperatorDecision(identityOf(record), decision)));
      return toVerificationDto(await this.repo.save(record), payout, this.chainInfo, new Date());
    });
  }

  /** The sandbox page's view of its session; null when the sandbox is not the provider or no current session has this reference. */
  async sandboxSession(reference: string): Promise<SandboxSessionView | null> {
    if (!(this.provider instanceof SandboxIdentityProvider)) return null;
    const record = await this.repo.findBySession('sandbox', reference);
    if (!record) return null;
    const org = await this.orgs.getOrganization(record.organizationId);
    const expired = (record.identityExpiresAt?.getTime() ?? 0) <= Date.now();
    return {
      reference,
      organizationName: org?.name ?? 'Organisation',
      status: record.identityStatus !== 'pending' ? 'decided' : expired ? 'expired' : 'open',
      identityStatus: record.identityStatus,
      expiresAt: record.identityExpiresAt,
    };
  }

  /**
   * The person's answer on the sandbox page, reported as the sandbox provider's signed callback
   * through {@link handleProviderCallback} (the path a real provider's callback takes).
   * @returns the session afterwards; null as {@link sandboxSession}.
   */
  async answerSandbox(reference: string, outcome: SandboxOutcome): Promise<SandboxSessionView | null> {
    const session = await this.sandboxSession(reference);
    if (!session || session.status !== 'open') return session;
    const { rawBody, headers } = (this.provider as SandboxIdentityProvider).signCallback(reference, outcome);
    await this.handleProviderCallback('sandbox', rawBody, headers);
    return this.sandboxSession(reference);
  }

  /**
   * `demo:verify-wallet` (local chain): issues or reuses the wallet check, pays it from `wallet`
   * (the payout address's key) and confirms it as the API would.
   * @throws AppError as {@link checkout} and {@link confirm}; Error outside the local chain.
   */
  async demoVerifyWallet(organizationId: string, wallet: Wallet): Promise<{ txHash: string; amount: string; payTo: string; status: string; wallet: string }> {
    const check = await this.checkout(organizationId);
    const txHash = await this.chain.demoTransfer(wallet, check.payTo!, parseAmount(check.amount!));
    const after = await this.confirm(organizationId, txHash);
    return { txHash, amount: check.amount!, payTo: check.payTo!, status: after.status, wallet: after.wallet.status };
  }

  /** Which provider sessions start with. */
  get providerName(): IdentityProviderName {
    return this.provider.name;
  }
}

/** The 403 `kyb_rejected` refusal (docs/architecture.md §12), also raised by gated writes that check in SQL. */
export function kybRejected(): AppError {
  return new AppError('kyb_rejected', 'This organisation’s verification was rejected; contact the operator to reopen it');
}

function identityOf(r: OrganizationVerification): IdentityCheck {
  return {
    status: r.identityStatus,
    provider: r.identityProvider,
    reference: r.identityReference,
    providerStatus: r.identityProviderStatus,
    lastError: r.identityLastError,
    decidedBy: r.identityDecidedBy,
  };
}

function fromIdentity(i: IdentityCheck): Partial<OrganizationVerification> {
  const cleared = i.reference === null;
  return {
    identityStatus: i.status,
    identityProvider: i.provider,
    identityReference: i.reference,
    identityProviderStatus: i.providerStatus,
    identityLastError: i.lastError,
    identityDecidedBy: i.decidedBy,
    ...(cleared ? { identityUrl: null, identityExpiresAt: null } : {}),
  };
}
