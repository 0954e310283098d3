import type { AddressInfo } from 'node:net';
import { request as httpRequest } from 'node:http';
import { createTestApp, TestApp } from '../support/app';
import { createAgentKey, createOrg, TestOrg } from '../support/factories';
import {
  FuzzFinding,
  FuzzOperation,
  FuzzRequest,
  invalidRequests,
  OpenApiDoc,
  operationsOf,
  ResponseChecker,
  seededRandom,
  validRequest,
} from '../support/openapi-fuzz';

/**
 * Fuzzes every operation of our own `/docs-json` over real HTTP against the real api (Postgres,
 * Redis, anvil): FUZZ_RUNS valid and FUZZ_RUNS invalid requests per operation (default 12 in
 * `npm test`; `npm run fuzz` runs 300), every response checked against the document. Prints the
 * totals; fails on any 5xx or any response the document does not describe. FUZZ_SEED repeats a run.
 */
const RUNS = Number(process.env.FUZZ_RUNS ?? 12);
const SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 1_000_000);
jest.setTimeout(Math.max(120_000, RUNS * 4_000));

interface Sent {
  status: number;
  body: string;
}

/** Sends a raw request with node:http (no client-side rewriting of bodies or headers). */
function send(base: string, r: FuzzRequest): Promise<Sent | null> {
  return new Promise((resolve, reject) => {
    let req;
    try {
      req = httpRequest(base + r.url, { method: r.method, headers: { ...r.headers, ...(r.body !== undefined ? { 'content-length': Buffer.byteLength(r.body) } : {}) } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      });
    } catch {
      resolve(null); // node refuses to send it (e.g. a control character in a header): not a request a client can make
      return;
    }
    req.on('error', reject);
    if (r.body !== undefined) req.write(r.body);
    req.end();
  });
}

describe(`API fuzzing from /docs-json (FUZZ_RUNS=${RUNS}, FUZZ_SEED=${SEED})`, () => {
  let t: TestApp;
  let base: string;
  let doc: OpenApiDoc;
  let merchant: TestOrg;
  let agentKey: string;
  let checkoutId: string;

  beforeAll(async () => {
    t = await createTestApp({ AUTH_FAILURES_PER_MINUTE: '1000000' });
    await t.app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}`;
    merchant = await createOrg(t.app);
    agentKey = (await createAgentKey(t.app, merchant.organizationId, ['agent:balance:read', 'agent:pay', 'agent:escrow:fund', 'agent:mandate'])).key;
    const res = await fetch(`${base}/docs-json`);
    doc = (await res.json()) as OpenApiDoc;
    const created = await fetch(`${base}/api/v1/checkout-sessions`, {
      method: 'POST',
      headers: { 'x-api-key': merchant.key, 'content-type': 'application/json' },
      body: JSON.stringify({ amount: '10.00', description: 'fuzz seed' }),
    });
    checkoutId = ((await created.json()) as { id: string }).id;
  });
  afterAll(() => t.close());

  it('answers every generated request without a 5xx and as the document describes', async () => {
    const checker = new ResponseChecker(doc);
    const ops = operationsOf(doc).filter((o) => !o.path.startsWith('/docs'));
    expect(ops.length).toBeGreaterThan(10);
    const ctx = {
      credentialFor: (o: FuzzOperation) => (o.op['x-agent-key'] ? agentKey : o.op.security?.length ? merchant.key : undefined),
      knownId: (path: string) => (path.startsWith('/api/v1/checkout-sessions/') ? checkoutId : undefined),
    };
    const findings: FuzzFinding[] = [];
    const totals = { requests: 0, valid: 0, invalid: 0, unsendable: 0, byStatus: {} as Record<string, number> };
    for (const [i, fop] of ops.entries()) {
      const rng = seededRandom(SEED + i);
      const requests = [
        ...Array.from({ length: RUNS }, () => validRequest(doc, fop, ctx, rng)),
        ...invalidRequests(doc, fop, ctx, RUNS, SEED + i),
      ];
      for (const r of requests) {
        const res = await send(base, r);
        if (!res) {
          totals.unsendable++;
          continue;
        }
        totals.requests++;
        totals[r.kind]++;
        totals.byStatus[res.status] = (totals.byStatus[res.status] ?? 0) + 1;
        const finding = checker.check(fop, r, res.status, res.body);
        if (finding) findings.push(finding);
      }
    }
    const serverErrors = findings.filter((f) => f.problem === 'server_error').length;
    console.log(
      `fuzz: ${ops.length} operations, ${totals.requests} requests (${totals.valid} valid, ${totals.invalid} invalid, ${totals.unsendable} unsendable), ` +
        `5xx ${serverErrors}, schema breaks ${findings.length - serverErrors}, statuses ${JSON.stringify(totals.byStatus)}, seed ${SEED}`,
    );
    // One line per kind of break (operation, status, problem, first words of the detail), with an example variant.
    const kinds = new Map<string, string>();
    for (const f of findings) {
      const kind = `${f.label} ${f.status} ${f.problem}: ${f.detail.split(' body ')[0].slice(0, 160)}`;
      if (!kinds.has(kind)) kinds.set(kind, `${kind} [e.g. ${f.variant}: ${f.request.method} ${f.request.url.slice(0, 80)} ${(f.request.body ?? '').slice(0, 120)}]`);
    }
    expect([...kinds.values()]).toEqual([]);
  });
});
