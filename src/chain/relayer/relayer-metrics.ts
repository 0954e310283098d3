import { Counter, Gauge } from 'prom-client';
import { metricsRegistry } from '../../common/metrics';

/**
 * The relayer key's ETH balance (wei as a float: alerting only, never money arithmetic), set on every
 * balance check (relay guard, /health/ready). Alert when `relayer_balance_low == 1` (DESIGN §18).
 */
export const relayerBalance = new Gauge({
  name: 'relayer_balance_wei',
  help: 'ETH balance of the relayer key in wei, at the last check',
  labelNames: ['address'] as const,
  registers: [metricsRegistry],
});

/** 1 while the relayer's ETH is below RELAYER_MIN_BALANCE (relays are refused with 503 unavailable), else 0. */
export const relayerBalanceLow = new Gauge({
  name: 'relayer_balance_low',
  help: '1 while the relayer ETH balance is below RELAYER_MIN_BALANCE',
  labelNames: ['address'] as const,
  registers: [metricsRegistry],
});

/** Relayer transactions replaced (fee bump), resent after a drop, or whose nonce was filled. */
export const relayerReplacements = new Counter({
  name: 'relayer_replacements_total',
  help: 'Relayer transactions bumped, resent after a drop, filled with a 0-value self-transfer, or found reorged out (kind=reorged; then resent or filled)',
  labelNames: ['kind'] as const,
  registers: [metricsRegistry],
});
