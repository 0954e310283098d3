/**
 * The verification state machine (docs/architecture.md §12), pure like escrow.state.ts: the
 * overall status derived from the two checks, the wallet check as the API shows it, how provider
 * outcomes and operator decisions move the identity check, and which USDC transfer pays a wallet
 * check. No I/O; the service reads, calls these and writes.
 */

/** Status of the record and of each check. */
export type CheckStatus = 'unverified' | 'pending' | 'verified' | 'rejected';
export type VerificationStatus = CheckStatus;
/** The wallet check as rendered: `expired` = issued, unpaid and past its 90 minutes. */
export type WalletStatus = 'unverified' | 'pending' | 'expired' | 'verified';
export type IdentityProviderName = 'sandbox' | 'stripe';
export const IDENTITY_PROVIDERS: readonly IdentityProviderName[] = ['sandbox', 'stripe'];

/** How long a wallet check stays open (docs/architecture.md §12: 90 minutes). */
export const WALLET_CHECK_TTL_SECONDS = 90 * 60;
/** The wallet amount: 1.000000–1.999999 USDC, in base units. */
export const WALLET_AMOUNT_MIN = 1_000_000n;
export const WALLET_AMOUNT_SPAN = 1_000_000;

/**
 * Provider statuses → identity check (docs/architecture.md §12): Stripe `verified` → verified; `processing` and `requires_input` →
 * pending (the latter with `lastError`); `canceled` → unverified. The sandbox speaks Stripe's
 * words plus Persona's `declined` → rejected.
 */
export const PROVIDER_STATUS_MAP: Record<IdentityProviderName, Record<string, CheckStatus>> = {
  stripe: { verified: 'verified', processing: 'pending', requires_input: 'pending', canceled: 'unverified' },
  sandbox: { verified: 'verified', processing: 'pending', requires_input: 'pending', canceled: 'unverified', declined: 'rejected' },
};

/** A provider's signed report about one of its sessions, already mapped with {@link PROVIDER_STATUS_MAP}. */
export interface IdentityOutcome {
  provider: IdentityProviderName;
  reference: string;
  providerStatus: string;
  status: CheckStatus;
  lastError: string | null;
}

/** The identity check's stored fields a transition reads and writes. */
export interface IdentityCheck {
  status: CheckStatus;
  provider: IdentityProviderName | null;
  reference: string | null;
  providerStatus: string | null;
  lastError: string | null;
  decidedBy: 'provider' | 'operator' | null;
}

/** Maps a provider status; null for a status the provider does not define (ignored, never guessed). */
export function mapProviderStatus(provider: IdentityProviderName, providerStatus: string): CheckStatus | null {
  return PROVIDER_STATUS_MAP[provider][providerStatus] ?? null;
}

/**
 * Applies a provider's signed outcome. Only the organisation's current session moves the check,
 * and only while it is `pending`: verified, rejected and a cancelled session absorb every later
 * report (so out-of-order or replayed callbacks cannot undo a decision; only the operator can).
 * @returns the next identity check, or `{ignored}` with why.
 */
export function applyIdentityOutcome(current: IdentityCheck, outcome: IdentityOutcome): { next: IdentityCheck } | { ignored: 'other_session' | 'decided' } {
  if (current.provider !== outcome.provider || current.reference !== outcome.reference) return { ignored: 'other_session' };
  if (current.status !== 'pending') return { ignored: 'decided' };
  return {
    next: {
      ...current,
      status: outcome.status,
      providerStatus: outcome.providerStatus,
      lastError: outcome.status === 'verified' ? null : outcome.lastError,
      decidedBy: outcome.status === 'pending' ? null : 'provider',
    },
  };
}

/** Operator decisions of `verification:decide --identity`. */
export type OperatorDecision = 'approved' | 'declined' | 'reopen';
export const OPERATOR_DECISIONS: readonly OperatorDecision[] = ['approved', 'declined', 'reopen'];

/**
 * The operator's decision, from any state (docs/architecture.md §12: `rejected` sticks until the
 * operator reopens it). `reopen` forgets the session, so its late callbacks are ignored and the
 * organisation starts again.
 */
export function applyOperatorDecision(current: IdentityCheck, decision: OperatorDecision): IdentityCheck {
  if (decision === 'reopen') {
    return { status: 'unverified', provider: null, reference: null, providerStatus: null, lastError: null, decidedBy: null };
  }
  return { ...current, status: decision === 'approved' ? 'verified' : 'rejected', lastError: null, decidedBy: 'operator' };
}

/** Who may start an identity session from which status (a new session per call until decided). */
export const IDENTITY_START_FROM: readonly CheckStatus[] = ['unverified', 'pending'];
/** From which wallet status a wallet check may be issued or confirmed. */
export const WALLET_CHECKOUT_FROM: readonly WalletStatus[] = ['unverified', 'pending', 'expired'];
export const WALLET_CONFIRM_FROM: readonly WalletStatus[] = ['pending', 'expired'];

/** The stored wallet fields. */
export interface StoredWallet {
  status: 'unverified' | 'pending' | 'verified';
  address: string | null;
  expiresAt: Date | null;
}

/**
 * The wallet check as the API shows it. A check bound to another address than the current payout
 * address is reset (`unverified`: changing the payout address resets the wallet check); an unpaid
 * check past `expiresAt` is `expired` (a payment mined inside the window still confirms it).
 */
export function walletStatus(stored: StoredWallet, payoutAddress: string | null, now: Date): WalletStatus {
  if (stored.status === 'unverified' || !stored.address) return 'unverified';
  if (!payoutAddress || payoutAddress.toLowerCase() !== stored.address.toLowerCase()) return 'unverified';
  if (stored.status === 'pending' && stored.expiresAt && stored.expiresAt.getTime() <= now.getTime()) return 'expired';
  return stored.status;
}

/**
 * The record's status: `rejected` when the identity check is; `verified` exactly when both checks
 * passed; `pending` once either has started or passed; else `unverified`.
 */
export function overallStatus(identity: CheckStatus, wallet: WalletStatus): VerificationStatus {
  if (identity === 'rejected') return 'rejected';
  if (identity === 'verified' && wallet === 'verified') return 'verified';
  if (identity !== 'unverified' || wallet === 'pending' || wallet === 'verified') return 'pending';
  return 'unverified';
}

/** One USDC Transfer log of a mined transaction. */
export interface TransferLog {
  from: string;
  to: string;
  value: bigint;
  logIndex: number;
}

/** The issued wallet check a transfer must pay. Block bounds in chain terms. */
export interface WalletExpectation {
  from: string;
  payTo: string;
  amount: bigint;
  /** The chain head when the check was issued: the payment must be mined in a later block. */
  afterBlock: bigint;
  /** Unix seconds (chain clock): the payment's block time must not be later. */
  chainDeadline: bigint;
}

/** Why a transaction does not pay the wallet check (`details.reason` of the 400). */
export type WalletMismatch = 'no_transfer' | 'wrong_recipient' | 'wrong_sender' | 'wrong_amount' | 'too_early' | 'too_late';

/**
 * Finds the USDC transfer paying the wallet check: from the payout address, to the verification
 * address, exactly the amount, mined after the check was issued and no later than its deadline.
 * The reason names the first rule no log satisfies, in the order recipient → sender → amount.
 */
export function matchWalletTransfer(
  logs: readonly TransferLog[],
  block: { number: bigint; timestamp: bigint },
  expected: WalletExpectation,
): { log: TransferLog } | { reason: WalletMismatch; message: string } {
  const eq = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();
  if (logs.length === 0) return { reason: 'no_transfer', message: 'the transaction moved no USDC' };
  const toUs = logs.filter((l) => eq(l.to, expected.payTo));
  if (toUs.length === 0) return { reason: 'wrong_recipient', message: `the transaction paid no USDC to ${expected.payTo}` };
  const fromPayout = toUs.filter((l) => eq(l.from, expected.from));
  if (fromPayout.length === 0) return { reason: 'wrong_sender', message: `the USDC was not sent from the payout address ${expected.from}` };
  const exact = fromPayout.find((l) => l.value === expected.amount);
  if (!exact) return { reason: 'wrong_amount', message: `the transfer must be exactly ${expected.amount} base units` };
  if (block.number <= expected.afterBlock) return { reason: 'too_early', message: 'the transfer was mined before this wallet check was issued' };
  if (block.timestamp > expected.chainDeadline) return { reason: 'too_late', message: 'the transfer was mined after this wallet check expired' };
  return { log: exact };
}
