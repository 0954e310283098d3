import { ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Wallet } from 'ethers';
import { createTestApp, TestApp } from '../support/app';
import { TestChain, USDC } from '../support/chain';
import { createOrg } from '../support/factories';
import { OtlpReceiver, ReceivedSpan } from '../support/otlp-receiver';
import { waitFor } from '../support/wait';
import { isolatedWebhookEnv, IsolatedEnv } from '../support/webhook-env';
import { WebhookReceiver } from '../support/webhook-receiver';
import { freePort } from '../support/processes';

jest.setTimeout(240_000);

const DIST = join(__dirname, '..', '..', 'dist', 'src');
/** Where the spans of the traced checkout are written, for docs/operations.md's picture (scripts/render-trace.mjs). */
const DUMP = join(__dirname, '..', '..', '.local', 'trace-checkout.json');

/** A compiled entrypoint (`node dist/src/<file>`) as a child process, up once `health` answers. */
class Proc {
  readonly output: string[] = [];
  private constructor(readonly child: ChildProcess) {
    child.stdout!.on('data', (b: Buffer) => this.output.push(b.toString()));
    child.stderr!.on('data', (b: Buffer) => this.output.push(b.toString()));
  }

  static async start(file: string, env: Record<string, string>, health: string): Promise<Proc> {
    const p = new Proc(spawn(process.execPath, [join(DIST, file)], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] }));
    await waitFor(
      async () => {
        if (p.child.exitCode !== null) throw new Error(`${file} exited with ${p.child.exitCode}: ${p.output.join('').slice(-3000)}`);
        return fetch(health).then((r) => r.ok).catch(() => false);
      },
      { timeoutMs: 60_000, intervalMs: 100, label: `${file} up` },
    );
    return p;
  }

  /** JSON log lines (pino) of this process. */
  logLines(): Array<Record<string, unknown>> {
    return this.output
      .join('')
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null) return;
    const exited = new Promise((resolve) => this.child.on('exit', resolve));
    this.child.kill('SIGTERM');
    await exited;
  }
}

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

/**
 * One trace from request to webhook (issue 21, DESIGN §20), with the real compiled api and worker as
 * two processes exporting OTLP/HTTP to a receiver run here. A client that traces (this test, as a
 * root span of its own) creates a checkout and has it funded through the pay page's relay; anvil
 * mines the relayer's transaction, the worker's indexer applies it and writes checkout.funded, the
 * outbox relay and the delivery job send it. Every span of that work is in the client's trace, in
 * both processes, each span's parent is in the trace, and the webhook request carries the
 * `traceparent` of its client span.
 */
describe('tracing: one checkout, one trace across api and worker processes', () => {
  let iso: IsolatedEnv;
  let t: TestApp;
  let chain: TestChain;
  let otlp: OtlpReceiver;
  let hooks: WebhookReceiver;
  let api: Proc | undefined;
  let worker: Proc | undefined;

  beforeAll(async () => {
    if (!existsSync(join(DIST, 'main.js'))) throw new Error('dist/src/main.js is missing: build first (npm run build) — this test runs the compiled processes');
    iso = await isolatedWebhookEnv('otel');
    t = await createTestApp(iso.env);
    chain = new TestChain();
    otlp = await OtlpReceiver.start();
    hooks = await WebhookReceiver.start();
  });

  afterAll(async () => {
    await api?.stop();
    await worker?.stop();
    await hooks?.close();
    await otlp?.close();
    chain?.close();
    await t?.close();
    await iso?.drop();
  });

  it('create → relay funding → anvil → indexer → outbox → checkout.funded webhook: one trace, parents right, traceparent on the webhook', async () => {
    const traced = {
      ...iso.env,
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.endpoint,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '100',
      LOG_LEVEL: 'info',
      NODE_ENV: 'test',
    };
    const apiPort = await freePort();
    const workerPort = await freePort();
    worker = await Proc.start('worker.js', { ...traced, WORKER_PORT: String(workerPort) }, `http://127.0.0.1:${workerPort}/health/ready`);
    api = await Proc.start('main.js', { ...traced, PORT: String(apiPort), MCP_PORT: '0' }, `http://127.0.0.1:${apiPort}/health/live`);
    const base = `http://127.0.0.1:${apiPort}`;

    const sellerWallet = await chain.wallet();
    const seller = await createOrg(t.app, { payoutAddress: sellerWallet.address });
    const put = await t.http.put('/api/v1/webhook-endpoints').set('X-Api-Key', seller.key).send({ url: hooks.url() });
    expect(put.status).toBe(200);
    hooks.secrets = [put.body.secret as string];
    const buyer: Wallet = await chain.wallet({ usdc: 50n * USDC, eth: false });

    // The client's own trace: one root, one client span per request it makes (not exported; their ids are known).
    const traceId = hex(16);
    const clientSpans = { create: hex(8), funding: hex(8), relay: hex(8) };
    const tp = (spanId: string) => `00-${traceId}-${spanId}-01`;

    const created = await fetch(`${base}/api/v1/checkout-sessions`, {
      method: 'POST',
      headers: { 'X-Api-Key': seller.key, 'Content-Type': 'application/json', traceparent: tp(clientSpans.create) },
      body: JSON.stringify({ amount: '12.50', description: 'traced order' }),
    });
    expect(created.status).toBe(200);
    const checkout = (await created.json()) as { id: string };

    const fundingRes = await fetch(`${base}/checkout/${checkout.id}/funding?buyer=${buyer.address}`, { headers: { traceparent: tp(clientSpans.funding) } });
    expect(fundingRes.status).toBe(200);
    const { typedData } = (await fundingRes.json()) as { typedData: { domain: Record<string, unknown>; types: Record<string, Array<{ name: string; type: string }>>; message: Record<string, string> } };
    const types = Object.fromEntries(Object.entries(typedData.types).filter(([k]) => k !== 'EIP712Domain'));
    const m = typedData.message;
    const relay = await fetch(`${base}/checkout/${checkout.id}/relay`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', traceparent: tp(clientSpans.relay) },
      body: JSON.stringify({ buyer: buyer.address, validAfter: m.validAfter, validBefore: m.validBefore, nonce: m.nonce, signature: await buyer.signTypedData(typedData.domain, types, m) }),
    });
    expect(relay.status).toBe(200);
    const { txHash } = (await relay.json()) as { txHash: string };

    // The webhook arrives, carrying a traceparent of the client's trace.
    const delivered = await waitFor(() => hooks.received.find((d) => d.body?.type === 'checkout.funded' && (d.body.data.object as { id?: string }).id === checkout.id), {
      timeoutMs: 120_000,
      intervalMs: 100,
      label: 'checkout.funded delivered',
      describe: () => ({ received: hooks.received.length, worker: worker!.output.join('').slice(-2000) }),
    });
    expect(delivered.verifiedWith).toEqual([0]);
    const header = delivered.headers.traceparent;
    expect(header).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    const [, headerTrace, webhookSpanId] = header.split('-');
    expect(headerTrace).toBe(traceId);

    // Every span of the trace reaches the receiver: each parent is in the trace or one of the client's spans.
    const clientIds = new Set(Object.values(clientSpans));
    const complete = (): ReceivedSpan[] | null => {
      const spans = otlp.trace(traceId);
      const ids = new Set(spans.map((s) => s.spanId));
      if (!ids.has(webhookSpanId)) return null;
      return spans.every((s) => ids.has(s.parentSpanId) || clientIds.has(s.parentSpanId)) ? spans : null;
    };
    const spans = await waitFor(complete, {
      timeoutMs: 30_000,
      intervalMs: 100,
      label: 'the whole trace exported',
      describe: () => otlp.trace(traceId).map((s) => `${s.service} ${s.name} ${s.spanId}<-${s.parentSpanId}`),
    });
    mkdirSync(join(DUMP, '..'), { recursive: true });
    writeFileSync(DUMP, JSON.stringify({ traceId, clientSpans, spans }, null, 2));

    const byId = new Map(spans.map((s) => [s.spanId, s]));
    const services = new Set(spans.map((s) => s.service));
    expect(services).toEqual(new Set(['payments-api', 'payments-worker']));

    // Each request's server span is a child of the client span that sent it.
    const serverSpanOf = (clientSpan: string) => spans.find((s) => s.parentSpanId === clientSpan && s.kind === 2);
    for (const c of Object.values(clientSpans)) expect(serverSpanOf(c)).toMatchObject({ service: 'payments-api' });
    expect(serverSpanOf(clientSpans.create)!.attributes['http.route']).toBe('/api/v1/checkout-sessions');

    // From the webhook request back to the client: delivery job ← outbox relay ← indexer's apply
    // (worker) ← the relay request that queued the transaction (api) ← the client's relay span.
    const path: ReceivedSpan[] = [];
    for (let s = byId.get(webhookSpanId); s; s = byId.get(s.parentSpanId)) path.push(s);
    const names = path.map((s) => `${s.service}: ${s.name}`);
    expect(path[path.length - 1].parentSpanId).toBe(clientSpans.relay);
    const at = (name: string) => names.findIndex((n) => n.includes(name));
    expect(names[0]).toBe('payments-worker: webhook POST');
    for (const step of ['payments-worker: process webhook-deliveries', 'payments-worker: outbox relay', 'payments-worker: escrow apply funded', 'payments-api: POST']) {
      expect(at(step)).toBeGreaterThan(-1);
    }
    expect(at('process webhook-deliveries')).toBeLessThan(at('outbox relay'));
    expect(at('outbox relay')).toBeLessThan(at('escrow apply funded'));
    expect(at('escrow apply funded')).toBeLessThan(at('payments-api: POST'));

    // The indexer's apply links to the pass that picked the log up (a span of the worker's own chain job).
    const apply = path[at('escrow apply funded')];
    expect(apply.attributes['chain.tx_hash']).toBe(txHash.toLowerCase());
    expect(apply.links.length).toBe(1);
    expect(apply.links[0].traceId).not.toBe(traceId);

    // The relayer's own job ran in the worker inside the same trace (BullMQ telemetry from the api's add).
    expect(spans.some((s) => s.service === 'payments-worker' && s.name === 'process relayer')).toBe(true);

    // The rows hold the context: the relayer transaction the trace id beside its hash, the outbox row the apply span.
    const [rtx] = await t.dataSource.query(`SELECT traceparent FROM relayer_transactions WHERE tx_hash = $1`, [txHash.toLowerCase()]);
    expect(rtx.traceparent.split('-')[1]).toBe(traceId);
    const [event] = await t.dataSource.query(`SELECT traceparent FROM outbox_events WHERE id = $1`, [delivered.webhookId]);
    expect(event.traceparent).toBe(`00-${traceId}-${apply.spanId}-01`);

    // Log lines carry the trace: the api's request line of the relay POST.
    const relayLog = api.logLines().find((l) => (l.req as { url?: string } | undefined)?.url === `/checkout/${checkout.id}/relay`);
    expect(relayLog).toMatchObject({ trace_id: traceId, span_id: expect.stringMatching(/^[0-9a-f]{16}$/) });
  });
});
