import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A real JSON-RPC endpoint in front of anvil that can hold requests: while closed, every
 * request waits (and is counted in `held`) until {@link open}; {@link hold} makes the next
 * requests wait forever, as a node that never answers. Point an app's RPC_URL at `url`.
 */
export class RpcGate {
  private server!: Server;
  private waiting: Array<() => void> = [];
  private closed = false;
  private stuck = new Set<ServerResponse>();
  private forever = false;
  /** Requests that have arrived and are waiting right now. */
  held = 0;
  /** Requests that have arrived since start. */
  received = 0;
  url = '';

  private constructor(private readonly upstream: string) {}

  static async start(upstream: string): Promise<RpcGate> {
    const gate = new RpcGate(upstream);
    gate.server = createServer((req, res) => void gate.handle(req, res));
    await new Promise<void>((resolve) => gate.server.listen(0, '127.0.0.1', resolve));
    gate.url = `http://127.0.0.1:${(gate.server.address() as AddressInfo).port}`;
    return gate;
  }

  /** From now on requests wait until {@link open}. */
  close(): void {
    this.closed = true;
  }

  /** From now on requests never get an answer (until {@link stop}). */
  hold(): void {
    this.forever = true;
  }

  /** Lets every waiting request through and stops holding new ones. */
  open(): void {
    this.closed = false;
    this.forever = false;
    const waiting = this.waiting;
    this.waiting = [];
    for (const go of waiting) go();
  }

  async stop(): Promise<void> {
    this.open();
    for (const res of this.stuck) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  /**
   * From now on, requests of JSON-RPC `method` get `rule` (until {@link clearMethodRules}): `error`
   * answers a JSON-RPC error (e.g. -32603 "header not found") without asking anvil; `forward-then-hang`
   * hands the request to anvil (which acts on it) and never answers, as a node that accepted the
   * bytes and then timed out. `hits` counts the requests each rule caught.
   */
  answerMethod(method: string, rule: { kind: 'error'; code?: number; message?: string } | { kind: 'forward-then-hang' }): void {
    this.methodRules.set(method, rule);
  }

  clearMethodRules(): void {
    this.methodRules.clear();
  }

  /** Requests caught by a rule of {@link answerMethod}, per method. */
  readonly hits = new Map<string, number>();
  private readonly methodRules = new Map<string, { kind: 'error'; code?: number; message?: string } | { kind: 'forward-then-hang' }>();

  /** Applies a rule of {@link answerMethod}; true when the request was answered (or deliberately left hanging). */
  private async byMethod(body: Buffer, res: ServerResponse): Promise<boolean> {
    let msg: { id?: unknown; method?: string };
    try {
      msg = JSON.parse(body.toString('utf8')) as { id?: unknown; method?: string };
    } catch {
      return false;
    }
    const rule = msg && !Array.isArray(msg) && msg.method ? this.methodRules.get(msg.method) : undefined;
    if (!rule) return false;
    this.hits.set(msg.method!, (this.hits.get(msg.method!) ?? 0) + 1);
    if (rule.kind === 'error') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id ?? null, error: { code: rule.code ?? -32603, message: rule.message ?? 'header not found' } }));
      return true;
    }
    await fetch(this.upstream, { method: 'POST', headers: { 'content-type': 'application/json' }, body: body.toString('utf8') }).catch(() => undefined);
    this.stuck.add(res);
    return true;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    this.received++;
    if (this.methodRules.size && (await this.byMethod(Buffer.concat(chunks), res))) return;
    if (this.forever) {
      this.stuck.add(res);
      this.held++;
      res.on('close', () => this.held--);
      return;
    }
    if (this.closed) {
      this.held++;
      await new Promise<void>((go) => this.waiting.push(go));
      this.held--;
    }
    try {
      const upstream = await fetch(this.upstream, { method: 'POST', headers: { 'content-type': 'application/json' }, body: Buffer.concat(chunks) });
      res.writeHead(upstream.status, { 'content-type': 'application/json' });
      res.end(Buffer.from(await upstream.arrayBuffer()));
    } catch {
      res.destroy();
    }
  }
}
