import { Injectable, OnModuleDestroy } from '@nestjs/common';
import { context, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { Agent, request } from 'undici';
import { tracer, tracing } from '../../../common/tracing/trace-context';
import { AppConfig } from '../../../config/app-config';
import { UrlRefusedError, WebhookUrlService } from '../webhook-url.service';

/** Bytes of a response body kept on the delivery row (docs/decisions.md: first 4 KiB). */
export const RESPONSE_SNIPPET_BYTES = 4096;
/** Bytes of a response body read at most before the connection is dropped. */
export const RESPONSE_READ_LIMIT_BYTES = 64 * 1024;

/** Error classes recorded for failed attempts (docs/decisions.md). */
export type SendErrorClass = 'http' | 'redirect' | 'timeout' | 'dns' | 'connect' | 'tls' | 'refused';

/** Outcome of one HTTP attempt; never thrown, always returned. `durationMs` is wall time. */
export interface SendResult {
  ok: boolean;
  status: number | null;
  bodySnippet: string | null;
  error: string | null;
  errorClass: SendErrorClass | null;
  retryAfterSeconds: number | null;
  durationMs: number;
}

function retryAfter(header: string | string[] | undefined): number | null {
  const v = Array.isArray(header) ? header[0] : header;
  if (!v) return null;
  if (/^\d+$/.test(v.trim())) return Number(v.trim());
  const at = Date.parse(v);
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}

function classify(err: unknown): { errorClass: SendErrorClass; message: string } {
  const chain: Array<Error & { code?: string }> = [];
  for (let e = err as (Error & { code?: string; cause?: unknown }) | undefined; e && chain.length < 5; e = e.cause as typeof e) chain.push(e);
  const refused = chain.find((e) => e instanceof UrlRefusedError) as UrlRefusedError | undefined;
  if (refused) return { errorClass: refused.reason === 'unresolvable' ? 'dns' : 'refused', message: refused.message };
  const first = chain[0];
  const codes = chain.map((e) => e.code ?? '');
  const names = chain.map((e) => e.name);
  if (names.includes('TimeoutError') || names.includes('AbortError') || codes.some((c) => /TIMEOUT/.test(c))) return { errorClass: 'timeout', message: 'timed out' };
  if (codes.some((c) => c === 'ENOTFOUND' || c === 'EAI_AGAIN')) return { errorClass: 'dns', message: first?.message ?? 'dns failure' };
  if (codes.some((c) => /^(ERR_TLS|ERR_SSL|CERT_|UNABLE_TO|DEPTH_ZERO|SELF_SIGNED)/.test(c))) return { errorClass: 'tls', message: first?.message ?? 'tls failure' };
  return { errorClass: 'connect', message: first?.message ?? 'connection failed' };
}

/**
 * POSTs a signed webhook body (docs/architecture.md §8): `Content-Type: application/json`, the body sent
 * byte-for-byte, `WEBHOOK_TIMEOUT_MS` (default 15 s) for the whole exchange, redirects never
 * followed (a 3xx is a failure), at most 64 KiB of the answer read and 4 KiB kept. Connections
 * go through an undici Agent whose `lookup` is the SSRF guard's, so every new socket connects
 * only to a vetted address; the URL's scheme, userinfo and literal IP are checked first.
 * Inside a trace the POST is a client span and carries its W3C `traceparent` header (DESIGN §20),
 * so a receiver that traces sees the delivery as part of the payment's trace.
 */
@Injectable()
export class WebhookSender implements OnModuleDestroy {
  private agent: Agent | null = null;

  constructor(
    private readonly config: AppConfig,
    private readonly urls: WebhookUrlService,
  ) {}

  private get dispatcher(): Agent {
    const timeout = this.config.env.WEBHOOK_TIMEOUT_MS;
    this.agent ??= new Agent({
      connect: { lookup: this.urls.lookup, timeout },
      headersTimeout: timeout,
      bodyTimeout: timeout,
      keepAliveTimeout: 4_000,
      connections: 64,
    });
    return this.agent;
  }

  async onModuleDestroy(): Promise<void> {
    await this.agent?.close().catch(() => undefined);
  }

  /** Sends `body` to `url` with `headers` (plus `traceparent` inside a trace); never throws. */
  async send(url: string, body: string, headers: Record<string, string>): Promise<SendResult> {
    if (!tracing()) return this.post(url, body, headers);
    const span = tracer.startSpan('webhook POST', { kind: SpanKind.CLIENT, attributes: { 'http.request.method': 'POST', 'url.full': withoutQuery(url) } });
    const traced = { ...headers };
    propagation.inject(trace.setSpan(context.active(), span), traced);
    const res = await this.post(url, body, traced);
    if (res.status !== null) span.setAttribute('http.response.status_code', res.status);
    if (!res.ok) span.setStatus({ code: SpanStatusCode.ERROR, message: res.error ?? undefined });
    span.end();
    return res;
  }

  private async post(url: string, body: string, headers: Record<string, string>): Promise<SendResult> {
    const started = performance.now();
    const done = (r: Omit<SendResult, 'durationMs'>): SendResult => ({ ...r, durationMs: performance.now() - started });
    try {
      this.urls.checkStatic(url);
      const res = await request(url, {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json', 'user-agent': 'payments-control-plane-webhooks/1', ...headers },
        dispatcher: this.dispatcher,
        signal: AbortSignal.timeout(this.config.env.WEBHOOK_TIMEOUT_MS),
      });
      const kept: Buffer[] = [];
      let keptBytes = 0;
      let readBytes = 0;
      for await (const chunk of res.body as AsyncIterable<Buffer>) {
        readBytes += chunk.length;
        if (keptBytes < RESPONSE_SNIPPET_BYTES) {
          const part = chunk.subarray(0, RESPONSE_SNIPPET_BYTES - keptBytes);
          kept.push(part);
          keptBytes += part.length;
        }
        if (readBytes >= RESPONSE_READ_LIMIT_BYTES) {
          res.body.destroy();
          break;
        }
      }
      const snippet = keptBytes ? Buffer.concat(kept).toString('utf8').replace(/\uFFFD+$/, '').replace(/\u0000/g, '') : null;
      const status = res.statusCode;
      const ok = status >= 200 && status < 300;
      const redirect = status >= 300 && status < 400;
      return done({
        ok,
        status,
        bodySnippet: snippet ? snippetWithin(snippet) : null,
        error: ok ? null : redirect ? `redirect ${status} not followed` : `HTTP ${status}`,
        errorClass: ok ? null : redirect ? 'redirect' : 'http',
        retryAfterSeconds: ok ? null : retryAfter(res.headers['retry-after']),
      });
    } catch (err) {
      const { errorClass, message } = classify(err);
      return done({ ok: false, status: null, bodySnippet: null, error: `${errorClass}: ${message}`, errorClass, retryAfterSeconds: null });
    }
  }
}

/** The URL without userinfo, query or fragment (where merchants put tokens), for span attributes. */
function withoutQuery(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return 'invalid';
  }
}

/** Trims a decoded snippet so its UTF-8 encoding fits {@link RESPONSE_SNIPPET_BYTES}. */
function snippetWithin(text: string): string {
  let s = text;
  while (Buffer.byteLength(s, 'utf8') > RESPONSE_SNIPPET_BYTES) s = s.slice(0, -1);
  return s;
}
