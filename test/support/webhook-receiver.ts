import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Webhook } from 'standardwebhooks';

/** One request the receiver got, with the result of verifying it against each configured secret. */
export interface ReceivedDelivery {
  webhookId: string;
  timestamp: string;
  signature: string;
  headers: Record<string, string>;
  rawBody: string;
  body: { id: string; type: string; createdAt: string; data: { object: Record<string, unknown> } } | null;
  path: string;
  receivedAt: number;
  /** Indexes into `secrets` (at receipt) of the secrets whose verification passed. */
  verifiedWith: number[];
  verifyErrors: string[];
  answeredStatus: number;
}

/** What to answer: a status, or a status with headers and a body. */
export type Answer = number | { status: number; headers?: Record<string, string>; body?: string };

/**
 * A local HTTP receiver for webhook tests: records every request and verifies it with
 * `new Webhook(secret).verify(rawBody, headers)` (the `standardwebhooks` library, as a merchant
 * would) against every configured secret. `respond` decides the answer from the delivery and
 * how many requests carried the same webhook-id so far; `gate` holds answers until released.
 */
export class WebhookReceiver {
  readonly received: ReceivedDelivery[] = [];
  secrets: string[] = [];
  respond: (d: ReceivedDelivery, nthForId: number) => Answer = () => 200;
  /** Milliseconds to wait before answering. */
  delayMs = 0;
  private gateRelease: Promise<void> | null = null;
  private openGate: (() => void) | null = null;
  private held = 0;
  private readonly sockets = new Set<Socket>();
  private reading = 0;

  private constructor(private readonly server: Server) {}

  static async start(opts: { secrets?: string[]; respond?: WebhookReceiver['respond'] } = {}): Promise<WebhookReceiver> {
    let self: WebhookReceiver | null = null;
    const server = createServer((req, res) => void self!.handle(req, res));
    server.keepAliveTimeout = 1000;
    self = new WebhookReceiver(server);
    const receiver = self;
    server.on('connection', (socket: Socket) => {
      receiver.sockets.add(socket);
      socket.on('close', () => receiver.sockets.delete(socket));
    });
    if (opts.secrets) self.secrets = opts.secrets;
    if (opts.respond) self.respond = opts.respond;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return self;
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  url(path = '/hook', host = '127.0.0.1'): string {
    return `http://${host}:${this.port}${path}`;
  }

  /** Requests answered so far are recorded; from now on answers wait until {@link release}. */
  hold(): void {
    if (this.gateRelease) return;
    this.gateRelease = new Promise((resolve) => (this.openGate = resolve));
  }

  release(): void {
    this.openGate?.();
    this.gateRelease = null;
    this.openGate = null;
  }

  get heldCount(): number {
    return this.held;
  }

  /**
   * No connection is open and no request is being read: once every sender was killed (its sockets
   * closed by the kernel), nothing it sent can still be recorded. Held answers keep their connection
   * open, so {@link release} first.
   */
  get quiet(): boolean {
    return this.sockets.size === 0 && this.reading === 0;
  }

  /** Deliveries grouped by webhook-id. */
  byWebhookId(): Map<string, ReceivedDelivery[]> {
    const out = new Map<string, ReceivedDelivery[]>();
    for (const d of this.received) out.set(d.webhookId, [...(out.get(d.webhookId) ?? []), d]);
    return out;
  }

  async close(): Promise<void> {
    this.release();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    this.reading++;
    try {
      for await (const chunk of req) chunks.push(chunk as Buffer);
    } catch {
      return; // the sender went away mid-body: nothing was delivered
    } finally {
      this.reading--;
    }
    const rawBody = Buffer.concat(chunks).toString('utf8');
    const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : (v ?? '')]));
    const d: ReceivedDelivery = {
      webhookId: headers['webhook-id'] ?? '',
      timestamp: headers['webhook-timestamp'] ?? '',
      signature: headers['webhook-signature'] ?? '',
      headers,
      rawBody,
      body: null,
      path: req.url ?? '',
      receivedAt: Date.now(),
      verifiedWith: [],
      verifyErrors: [],
      answeredStatus: 0,
    };
    try {
      d.body = JSON.parse(rawBody) as ReceivedDelivery['body'];
    } catch {
      d.body = null;
    }
    this.secrets.forEach((secret, i) => {
      try {
        new Webhook(secret).verify(rawBody, headers);
        d.verifiedWith.push(i);
      } catch (err) {
        d.verifyErrors.push((err as Error).message);
      }
    });
    this.received.push(d);
    const nth = this.received.filter((r) => r.webhookId === d.webhookId).length;
    const answer = this.respond(d, nth);
    const { status, headers: extra = {}, body = '' } = typeof answer === 'number' ? { status: answer } : answer;
    d.answeredStatus = status;
    if (this.delayMs) await new Promise((r) => setTimeout(r, this.delayMs));
    if (this.gateRelease) {
      this.held++;
      await this.gateRelease;
      this.held--;
    }
    if (res.destroyed) return;
    res.writeHead(status, { 'content-type': 'text/plain', ...extra });
    res.end(body);
  }
}
