import { createServer, Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One span as an OTLP/JSON exporter sends it, flattened with its resource's `service.name`. */
export interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: Record<string, unknown>;
  links: Array<{ traceId: string; spanId: string }>;
}

type AnyValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };
type KeyValue = { key: string; value: AnyValue };
type OtlpSpan = Omit<ReceivedSpan, 'service' | 'attributes' | 'links' | 'parentSpanId'> & { parentSpanId?: string; attributes?: KeyValue[]; links?: Array<{ traceId: string; spanId: string }> };
type OtlpBody = { resourceSpans?: Array<{ resource?: { attributes?: KeyValue[] }; scopeSpans?: Array<{ spans?: OtlpSpan[] }> }> };

const value = (v: AnyValue): unknown => v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : (v.boolValue ?? v.doubleValue));
const attrs = (kvs: KeyValue[] = []): Record<string, unknown> => Object.fromEntries(kvs.map((kv) => [kv.key, value(kv.value)]));

/**
 * A small OTLP/HTTP trace receiver on 127.0.0.1 for tests (what a collector does at
 * `POST /v1/traces`), taking the JSON encoding (`OTEL_EXPORTER_OTLP_PROTOCOL=http/json`) and
 * keeping every span it is sent.
 */
export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];

  private constructor(private readonly server: Server) {}

  static async start(): Promise<OtlpReceiver> {
    let self: OtlpReceiver | null = null;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        if (req.method === 'POST' && req.url === '/v1/traces') {
          const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as OtlpBody;
          for (const rs of body.resourceSpans ?? []) {
            const service = String(attrs(rs.resource?.attributes)['service.name']);
            for (const ss of rs.scopeSpans ?? []) {
              for (const s of ss.spans ?? []) {
                self!.spans.push({ ...s, service, parentSpanId: s.parentSpanId ?? '', attributes: attrs(s.attributes), links: s.links ?? [] });
              }
            }
          }
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    self = new OtlpReceiver(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return self;
  }

  get endpoint(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  trace(traceId: string): ReceivedSpan[] {
    return this.spans.filter((s) => s.traceId === traceId);
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
