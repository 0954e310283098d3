import { NodeSDK } from '@opentelemetry/sdk-node';
import { ExpressInstrumentation } from '@opentelemetry/instrumentation-express';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { PinoInstrumentation } from '@opentelemetry/instrumentation-pino';

/** Incoming paths that are never traced: probes and scrapes, every few seconds, say nothing about a payment. */
const UNTRACED_PATHS = /^\/(health\/|metrics$)/;

/**
 * Builds and starts the OpenTelemetry Node SDK (loaded only when tracing is on; see ./tracing.ts).
 * Everything else comes from the standard `OTEL_*` variables the SDK reads itself: exporter and
 * protocol, endpoint and headers, sampler, batch sizes, resource attributes, propagators. Only
 * traces are exported unless `OTEL_METRICS_EXPORTER` / `OTEL_LOGS_EXPORTER` are set: metrics
 * already go to Prometheus (`/metrics`) and logs to stdout.
 *
 * Instrumentations: http (server spans of every request; outgoing spans, e.g. chain RPC, only inside
 * a trace), express (route and middleware spans), pg and ioredis (only inside a trace, so the
 * worker's polling loops do not open a trace per query), pino (`trace_id`/`span_id` on log lines).
 * BullMQ traces itself through its `telemetry` option (bullmq-otel, ./tracing.ts).
 */
export function startSdk(serviceName: string): NodeSDK {
  const sdk = new NodeSDK({
    serviceName: process.env.OTEL_SERVICE_NAME ? undefined : serviceName,
    metricReaders: process.env.OTEL_METRICS_EXPORTER ? undefined : [],
    logRecordProcessors: process.env.OTEL_LOGS_EXPORTER ? undefined : [],
    instrumentations: [
      new HttpInstrumentation({
        ignoreIncomingRequestHook: (req) => UNTRACED_PATHS.test(req.url ?? ''),
        requireParentforOutgoingSpans: true,
      }),
      new ExpressInstrumentation(),
      new PgInstrumentation({ requireParentSpan: true, ignoreConnectSpans: true }),
      new IORedisInstrumentation({ requireParentSpan: true }),
      new PinoInstrumentation({ disableLogSending: !process.env.OTEL_LOGS_EXPORTER }),
    ],
  });
  sdk.start();
  return sdk;
}
