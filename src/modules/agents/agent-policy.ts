import { formatAmount } from '@lib/money';

/**
 * An agent's spending policy as stored (docs/architecture.md §13; the model of Coinbase CDP policies
 * and spend permissions, Payman and Stripe Issuing controls). Limits are USDC base units as decimal
 * integer strings in JSON (never floats); absent = no limit. `allowedRecipients` holds handles, slugs
 * or addresses (lowercase); empty = any payee. Times are ISO-8601.
 */
export interface StoredPolicy {
  perTransactionMax?: string;
  dailyLimit?: string;
  monthlyLimit?: string;
  approvalThreshold?: string;
  allowedRecipients?: string[];
  mode: 'autonomous' | 'mandate';
  validFrom?: string;
  expiresAt?: string;
}

/** Policy rule names of `details.rule` in 403 policy_denied, in the order they are checked. */
export type PolicyRule =
  | 'no_policy'
  | 'not_yet_valid'
  | 'expired'
  | 'recipient_not_allowed'
  | 'per_transaction_limit'
  | 'daily_limit'
  | 'monthly_limit'
  | 'approval_required'
  | 'insufficient_balance';

/** What one spend asks for, and what the agent already used (base units, statuses pending+submitted+succeeded). */
export interface SpendRequest {
  amount: bigint;
  toHandle: string;
  toAddress: string;
  now: Date;
  usedToday: bigint;
  usedThisMonth: bigint;
  /** Spendable float: on-chain signer balance minus open (pending/submitted) reservations. */
  available: bigint;
}

/** A refusal: `details` of the 403 (rule, and limit/used/requested as decimal text where they apply). */
export interface PolicyRefusal {
  rule: PolicyRule;
  message: string;
  details: Record<string, unknown>;
}

/**
 * The first policy rule `req` breaks, in docs/architecture.md §13 order (no_policy, not_yet_valid,
 * expired, recipient_not_allowed, per_transaction_limit, daily_limit, monthly_limit,
 * approval_required, insufficient_balance), or null when the spend is allowed. Pure: compares bigint
 * base units only.
 */
export function evaluatePolicy(policy: StoredPolicy | null, req: SpendRequest): PolicyRefusal | null {
  const refuse = (rule: PolicyRule, message: string, extra: { limit?: bigint; used?: bigint } = {}): PolicyRefusal => ({
    rule,
    message,
    details: {
      rule,
      ...(extra.limit !== undefined ? { limit: formatAmount(extra.limit) } : {}),
      ...(extra.used !== undefined ? { used: formatAmount(extra.used) } : {}),
      requested: formatAmount(req.amount),
    },
  });
  if (!policy) return refuse('no_policy', 'This agent has no spending policy; the owner sets one with agent:policy:set');
  if (policy.validFrom && req.now < new Date(policy.validFrom)) return refuse('not_yet_valid', `The policy is valid from ${policy.validFrom}`);
  if (policy.expiresAt && req.now >= new Date(policy.expiresAt)) return refuse('expired', `The policy expired at ${policy.expiresAt}`);
  const allowed = policy.allowedRecipients ?? [];
  if (allowed.length > 0 && !allowed.includes(req.toHandle.toLowerCase()) && !allowed.includes(req.toAddress.toLowerCase())) {
    return refuse('recipient_not_allowed', `${req.toHandle} is not among the policy's allowed recipients`);
  }
  const limit = (v?: string) => (v === undefined ? undefined : BigInt(v));
  const perTx = limit(policy.perTransactionMax);
  if (perTx !== undefined && req.amount > perTx) return refuse('per_transaction_limit', 'The amount exceeds the per-transaction maximum', { limit: perTx });
  const daily = limit(policy.dailyLimit);
  if (daily !== undefined && req.usedToday + req.amount > daily) {
    return refuse('daily_limit', 'The payment would exceed the daily limit', { limit: daily, used: req.usedToday });
  }
  const monthly = limit(policy.monthlyLimit);
  if (monthly !== undefined && req.usedThisMonth + req.amount > monthly) {
    return refuse('monthly_limit', 'The payment would exceed the monthly limit', { limit: monthly, used: req.usedThisMonth });
  }
  const approval = limit(policy.approvalThreshold);
  if (approval !== undefined && req.amount > approval) {
    return refuse('approval_required', 'Payments above the approval threshold need the owner\'s approval', { limit: approval });
  }
  if (req.amount > req.available) {
    return refuse('insufficient_balance', 'The session signer holds too little USDC for this payment', { limit: req.available });
  }
  return null;
}

/** Start of the UTC calendar day and month of `now` (policy windows, docs/architecture.md §13). */
export function policyWindows(now: Date): { dayStart: Date; monthStart: Date } {
  return {
    dayStart: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate())),
    monthStart: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)),
  };
}

/** The policy as the API renders it: limits as decimal text, null where unset. */
export function renderPolicy(policy: StoredPolicy | null): Record<string, unknown> | null {
  if (!policy) return null;
  const amt = (v?: string) => (v === undefined ? null : formatAmount(BigInt(v)));
  return {
    perTransactionMax: amt(policy.perTransactionMax),
    dailyLimit: amt(policy.dailyLimit),
    monthlyLimit: amt(policy.monthlyLimit),
    approvalThreshold: amt(policy.approvalThreshold),
    allowedRecipients: policy.allowedRecipients ?? [],
    mode: policy.mode,
    validFrom: policy.validFrom ?? null,
    expiresAt: policy.expiresAt ?? null,
  };
}
