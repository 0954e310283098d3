import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * What the gate answers instead of the node for a chosen method: a JSON-RPC error (as a node
 * answers "header not found" or anvil's "BlockOutOfRangeError"), an HTTP status (a 502 from a
 * provider's load balancer), or a dropped connection.
 */
export type RpcFault = { rpcError: { code: number; message: string } } | { httpStatus: number } | 'drop';

/**
 * A real JSON-RPC endpoint in front of anvil that can hold requests: while closed, every
 * request waits (and is counted in `held`) until {@link open}; {@link hold} makes the next
 * requests wait forever, as a node that never answers. {@link fail} answers chosen methods with
 * chosen errors; {@link holdMethod} holds only chosen methods. Point an app's RPC_URL at `url`.
 */
export class RpcGate {
  private faults: Array<{ method: string; fault: RpcFault; left: number; pass: number }> = [];
  private heldMethods = new Set<string>();
  /** Requests answered with a fault, per method. */
  readonly failed: Record<string, number> = {};
  private server!: Server;
  private waiting: Array<() => void> = [];
  private closed = false;
  private stuck = new Set<ServerResponse>();
  private forever = false;
  /** Requests that have arrived and are waiting right now. */
  held = 0;
  /** Requests that have arrived since start. */
  received = 0;
  /** JSON-RPC calls answered with an error by a {@link refuse} rule, by method. */
  refused: Record<string, number> = {};
  private rules: Array<(method: string, params: unknown[]) => { code: number; message: string } | null> = [];
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

  /**
   * Answers the next `times` requests of `method` (e.g. `eth_getLogs`, `eth_call`) with `fault`
   * instead of passing them to the node (default: every one until {@link clearFaults}); with
   * `passFirst`, the first that many requests of `method` still reach the node.
   */
  fail(method: string, fault: RpcFault, times = Number.POSITIVE_INFINITY, passFirst = 0): void {
    this.faults.push({ method, fault, left: times, pass: passFirst });
  }

  /** Passes every method to the node again. */
  clearFaults(): void {
    this.faults = [];
  }

  /** From now on requests of `method` wait (counted in `held`) until {@link open}; others pass. */
  holdMethod(method: string): void {
    this.heldMethods.add(method);
  }

  /**
   * From now on a JSON-RPC call (also inside a batch) for which `rule` returns an error is answered
   * with that error instead of reaching anvil, as a public node refuses, e.g., wide eth_getLogs ranges.
   */
  refuse(rule: (method: string, params: unknown[]) => { code: number; message: string } | null): void {
    this.rules.push(rule);
  }

  /** Lets every waiting request through and stops holding new ones. */
  open(): void {
    this.closed = false;
    this.forever = false;
    this.heldMethods.clear();
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
   * bytes and then timed out; `result` answers a chosen result; `pass` lets it through (counted).
   * `hits` counts the requests each rule caught.
   */
  answerMethod(method: string, rule: MethodRule): void {
    this.methodRules.set(method, rule);
  }

  clearMethodRules(): void {
    this.methodRules.clear();
  }

  /** Requests caught by a rule of {@link answerMethod}, per method. */
  readonly hits = new Map<string, number>();
  private readonly methodRules = new Map<string, MethodRule>();

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
    if (rule.kind === 'pass') return false;
    if (rule.kind === 'result') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id ?? null, result: rule.result }));
      return true;
    }
    if (rule.kind === 'error') {
      res.writeHead(200, { 'content-type': 'application/json' });
      const error = { code: rule.code ?? -32603, message: rule.message ?? 'header not found', ...(rule.data ? { data: rule.data } : {}) };
      res.end(JSON.stringify({ jsonrpc: '2.0', id: msg.id ?? null, error }));
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
    const method = methodOf(Buffer.concat(chunks));
    const rule = this.faults.find((f) => f.method === method && f.left > 0);
    if (rule && rule.pass > 0) rule.pass--;
    else if (rule) {
      rule.left--;
      this.failed[method] = (this.failed[method] ?? 0) + 1;
      if (rule.fault === 'drop') {
        res.destroy();
        return;
      }
      if ('httpStatus' in rule.fault) {
        res.writeHead(rule.fault.httpStatus, { 'content-type': 'text/plain' });
        res.end('bad gateway');
        return;
      }
      const id = idOf(Buffer.concat(chunks));
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id, error: rule.fault.rpcError }));
      return;
    }
    if (this.heldMethods.has(method)) {
      this.held++;
      await new Promise<void>((go) => this.waiting.push(go));
      this.held--;
    }
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
      const body = Buffer.concat(chunks);
      if (this.rules.length) {
        const parsed = JSON.parse(body.toString()) as Call | Call[];
        const calls = Array.isArray(parsed) ? parsed : [parsed];
        const refusals = new Map<Call, { code: number; message: string }>();
        for (const c of calls) {
          for (const rule of this.rules) {
            const error = rule(c.method, c.params ?? []);
            if (error) {
              refusals.set(c, error);
              this.refused[c.method] = (this.refused[c.method] ?? 0) + 1;
              break;
            }
          }
        }
        if (refusals.size) {
          const pass = calls.filter((c) => !refusals.has(c));
          const answered = pass.length
            ? ((await (await fetch(this.upstream, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(pass) })).json()) as Array<{ id: unknown }>)
            : [];
          const out = calls.map((c) => (refusals.has(c) ? { jsonrpc: '2.0', id: c.id, error: refusals.get(c) } : answered.find((a) => a.id === c.id)));
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify(Array.isArray(parsed) ? out : out[0]));
          return;
        }
      }
      const upstream = await fetch(this.upstream, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      res.writeHead(upstream.status, { 'content-type': 'application/json' });
      res.end(Buffer.from(await upstream.arrayBuffer()));
    } catch {
      res.destroy();
    }
  }
}

/** The JSON-RPC method of a request body (the first one of a batch); '' when unreadable. */
function methodOf(body: Buffer): string {
  try {
    const parsed = JSON.parse(body.toString('utf8')) as { method?: string } | Array<{ method?: string }>;
    return (Array.isArray(parsed) ? parsed[0]?.method : parsed.method) ?? '';
  } catch {
    return '';
  }
}

function idOf(body: Buffer): unknown {
  try {
    const parsed = JSON.parse(body.toString('utf8')) as { id?: unknown } | Array<{ id?: unknown }>;
    return (Array.isArray(parsed) ? parsed[0]?.id : parsed.id) ?? null;
  } catch {
    return null;
  }
}

/**
 * A rule of {@link RpcGate.answerMethod}: `error` (with optional revert `data`, as a node answers
 * "execution reverted"), `result` (an answer of the gate's choosing, e.g. null for a transaction the
 * node does not know), `pass` (reaches the node; only counted in `hits`), `forward-then-hang`.
 */
export type MethodRule =
  | { kind: 'error'; code?: number; message?: string; data?: string }
  | { kind: 'result'; result: unknown }
  | { kind: 'pass' }
  | { kind: 'forward-then-hang' };

/** One JSON-RPC call as the gate reads it. */
interface Call {
  id: unknown;
  method: string;
  params?: unknown[];
}
