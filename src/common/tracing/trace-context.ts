import { type Attributes, context, type Context, INVALID_SPAN_CONTEXT, type Link, propagation, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';

/**
 * W3C Trace Context across the boundaries we own (DESIGN §20, docs/operations.md "Traces"): a row
 * that another process picks up later (an outbox event, a relayer transaction) stores the
 * `traceparent` of the code that wrote it, and the code that picks it up continues that trace.
 * Uses `@opentelemetry/api` only: with tracing off its no-op propagator and tracer make every
 * function here answer null or run the callback as is.
 */
export const tracer = trace.getTracer('payments-control-plane');

/** The W3C `traceparent` (version-traceid-spanid-flags) of the active span, or null when nothing is traced. */
export function currentTraceparent(): string | null {
  if (!trace.getActiveSpan()?.isRecording()) return null;
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent ?? null;
}

/** The context a stored `traceparent` names (the root context when it is null or malformed). */
export function contextFromTraceparent(traceparent: string | null | undefined): Context {
  return traceparent ? propagation.extract(ROOT_CONTEXT, { traceparent }) : ROOT_CONTEXT;
}

/** The trace id inside a `traceparent`, or null. */
export function traceIdOf(traceparent: string | null | undefined): string | null {
  return trace.getSpanContext(contextFromTraceparent(traceparent))?.traceId ?? null;
}

/** Whether a span is being recorded here: the cheap test before any work done only for traces. */
export function tracing(): boolean {
  return trace.getActiveSpan()?.isRecording() === true;
}

/**
 * Runs `fn` in a new span that continues the trace of a stored `traceparent` (a row written by
 * another process), linked to the span active here (the loop or job that picked the row up); with
 * no stored context, a child of the active span. With tracing off, `fn` runs as is.
 */
export async function continueTrace<T>(
  name: string,
  traceparent: string | null | undefined,
  opts: { kind?: SpanKind; attributes?: Attributes },
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  const here = trace.getActiveSpan();
  if (!here?.isRecording() && !traceparent) return fn(trace.wrapSpanContext(INVALID_SPAN_CONTEXT));
  const stored = traceparent ? contextFromTraceparent(traceparent) : null;
  const parent = stored && trace.getSpanContext(stored) ? stored : context.active();
  const links: Link[] = parent === stored && here ? [{ context: here.spanContext() }] : [];
  return tracer.startActiveSpan(name, { kind: opts.kind ?? SpanKind.INTERNAL, attributes: opts.attributes, links }, parent, async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      span.recordException(err as Error);
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw err;
    } finally {
      span.end();
    }
  });
}
