import { Counter } from 'prom-client';
import { metricsRegistry } from '../../common/metrics';

/** Kinds of ledger-versus-chain mismatch (DESIGN §18); the `kind` label of {@link reconcileMismatches}. */
export const MISMATCH_KINDS = [
  'escrow_balance',
  'escrow_state',
  'payment_authorization',
  'x402_authorization',
  'relayer_nonce',
  'usdc_domain',
  'payment_amount',
  'payment_recipient',
  'stale_pending',
] as const;
export type MismatchKind = (typeof MISMATCH_KINDS)[number];

/**
 * Every mismatch a reconciliation pass finds, by kind: a mismatch that persists is counted again on each
 * pass, so `increase(reconcile_mismatches_total[1h]) > 0` alerts while it lasts.
 */
export const reconcileMismatches = new Counter({
  name: 'reconcile_mismatches_total',
  help: 'Ledger-versus-chain mismatches found by reconciliation passes, by kind (DESIGN §18)',
  labelNames: ['kind'] as const,
  registers: [metricsRegistry],
});

/** Reconciliation passes by outcome: clean, mismatch, skipped (another worker held the lock), failed (RPC or DB error). */
export const reconcileRuns = new Counter({
  name: 'reconcile_runs_total',
  help: 'Reconciliation passes by outcome',
  labelNames: ['outcome'] as const,
  registers: [metricsRegistry],
});

// Export every kind at 0 so a dashboard sees the series before the first mismatch.
for (const kind of MISMATCH_KINDS) reconcileMismatches.inc({ kind }, 0);
