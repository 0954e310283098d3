/**
 * The OpenTelemetry switch of every process (DESIGN §20, docs/operations.md "Traces"). Tracing is
 * configured only by the standard `OTEL_*` variables and is off unless one of them asks for an
 * exporter: `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, or
 * `OTEL_TRACES_EXPORTER` other than `none`; `OTEL_SDK_DISABLED=true` wins over both. When off,
 * nothing of the SDK, its instrumentations or bullmq-otel is loaded: the code paths that record
 * trace context use `@opentelemetry/api` alone, whose no-op providers answer "no context".
 */

import type { Telemetry } from 'bullmq';

type Env = Record<string, string | undefined>;

/** The running SDK (null while tracing is off); {@link shutdownTracing} flushes it. */
let running: { shutdown(): Promise<void> } | null = null;

/** Whether the `OTEL_*` variables in `env` ask for traces (the rule in the file doc). */
export function tracingRequested(env: Env = process.env): boolean {
  if ((env.OTEL_SDK_DISABLED ?? '').trim().toLowerCase() === 'true') return false;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '')
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter(Boolean);
  if (exporters.includes('none')) return false;
  return exporters.length > 0 || Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim());
}

/** Whether this process started the SDK. */
export function tracingStarted(): boolean {
  return running !== null;
}

/**
 * Starts the OpenTelemetry Node SDK when {@link tracingRequested}; must run before anything it
 * instruments (http, express, pg, ioredis, pino) is loaded, so each entrypoint imports its
 * `register-*` module first. `serviceName` is the default `service.name`; `OTEL_SERVICE_NAME` wins.
 * @returns true when the SDK was started.
 */
export function startTracing(serviceName: string): boolean {
  if (running || !tracingRequested()) return false;
  // Loaded only here, so a process with tracing off never loads the SDK.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { startSdk } = require('./sdk') as typeof import('./sdk');
  running = startSdk(serviceName);
  return true;
}

/** Flushes and stops the SDK (spans still buffered are exported); a no-op when tracing is off. */
export async function shutdownTracing(): Promise<void> {
  const sdk = running;
  running = null;
  await sdk?.shutdown().catch(() => undefined);
}

/**
 * BullMQ's own telemetry (the `telemetry` option of queues and workers, implemented by
 * bullmq-otel) when tracing runs, else undefined (BullMQ then traces nothing). Jobs carry the
 * W3C context of the code that added them, so a job continues its producer's trace.
 */
export function bullmqTelemetry(): Telemetry | undefined {
  if (!running) return undefined;
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { BullMQOtel } = require('bullmq-otel') as typeof import('bullmq-otel');
  return new BullMQOtel({ tracerName: 'bullmq' }) as unknown as Telemetry;
}
