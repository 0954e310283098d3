import { Counter, Gauge } from 'prom-client';
import { metricsRegistry } from '../../common/metrics';

/** Last block the escrow indexer applied. */
export const indexedBlock = new Gauge({ name: 'chain_indexer_block', help: 'Last block the escrow indexer applied', registers: [metricsRegistry] });

/** Escrow logs read by the indexer, by outcome: applied, duplicate, set_aside (could not be applied; see chain_events_set_aside). */
export const chainEvents = new Counter({
  name: 'chain_indexer_events_total',
  help: 'Escrow logs read, by outcome',
  labelNames: ['outcome'] as const,
  registers: [metricsRegistry],
});

/** Reorgs of already-processed blocks detected. */
export const reorgs = new Counter({ name: 'chain_reorgs_total', help: 'Reorgs of already-processed blocks detected', registers: [metricsRegistry] });

/** Chain job passes by job and outcome: done, skipped (another worker holds the pass lock), failed. */
export const chainJobRuns = new Counter({
  name: 'chain_job_runs_total',
  help: 'Chain job passes by job and outcome',
  labelNames: ['job', 'outcome'] as const,
  registers: [metricsRegistry],
});

/** Items a chain job could not handle and moved past (e.g. an auto-release the chain refused). */
export const chainJobItemFailures = new Counter({
  name: 'chain_job_item_failures_total',
  help: 'Items a chain job pass could not handle and moved past',
  labelNames: ['job'] as const,
  registers: [metricsRegistry],
});
