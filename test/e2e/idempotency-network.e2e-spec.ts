import { randomBytes, randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { createTestApp, TestApp } from '../support/app';
import { chainEventRows, createCheckout, createParties, fundOnChain, indexUntilStatus, Party, TestChain, USDC } from '../support/chain';
import { countSessions, expectError } from '../support/errors';
import { createOrg, TestOrg } from '../support/factories';
import { RpcGate } from '../support/rpc-gate';
import { waitFor } from '../support/wait';
import { parseAmount } from '@lib/money';
import { HostResolver, ResolvedAddress } from '../../src/modules/webhooks/webhook-url.service';

jest.setTimeout(120_000);

/** The api's Postgres pool size (src/database/data-source.ts). */
const POOL = 20;
const EXTRA = 5;

/** Resolves host names only when let through: a DNS server that is slow for as long as the test wants. */
class GatedResolver extends HostResolver {
  held = 0;
  private waiting: Array<() => void> = [];
  private closed = false;

  close(): void {
    this.closed = true;
  }

  open(): void {
    this.closed = false;
    const w = this.waiting;
    this.waiting = [];
    for (const go of w) go();
  }

  async resolve(): Promise<ResolvedAddress[]> {
    if (this.closed) {
      this.held++;
      await new Promise<void>((go) => this.waiting.push(go));
      this.held--;
    }
    return [{ address: '93.184.215.14', family: 4 }];
  }
}

/** Connections of this run's database that sit inside a transaction doing nothing (waiting on the app). */
async function idleInTransaction(pg: Client): Promise<number> {
  const rows = await pg.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND state LIKE 'idle in transaction%'`,
  );
  return rows.rows[0].n;
}

/** Resolves with the promise's value, or rejects when it takes longer than `ms`. */
function within<T>(ms: number, p: PromiseLike<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    Promise.resolve(p).finally(() => clearTimeout(timer)),
    new Promise<T>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} took over ${ms} ms`)), ms))),
  ]);
}

/**
 * No database transaction or pooled connection is held across a network call
 * (docs/architecture.md §5): the chain check of an escrow action and the DNS check of a
 * checkout's webhookUrl run before the idempotent transaction opens, each with a short timeout.
 * With a pool of POOL connections, POOL + EXTRA requests stuck in those calls must neither pin
 * connections nor block unrelated requests.
 */
describe('network calls outside database transactions', () => {
  let pg: Client;

  beforeAll(async () => {
    pg = new Client({ connectionString: process.env.DATABASE_URL });
    await pg.connect();
  });
  afterAll(() => pg.end());

  describe('verification confirm: the USDC transfer checked on chain', () => {
    let t: TestApp;
    let gate: RpcGate;
    let chain: TestChain;

    beforeAll(async () => {
      gate = await RpcGate.start(process.env.RPC_URL!);
      t = await createTestApp({ RPC_URL: gate.url, RPC_TIMEOUT_MS: '5000' });
      chain = new TestChain();
    });
    afterAll(async () => {
      chain?.close();
      await gate?.stop();
      await t?.close();
    });

    it(`${POOL + EXTRA} concurrent keyed confirms waiting on a slow node hold no connection and do not block an unrelated create`, async () => {
      const wallet = await chain.wallet({ usdc: 10n * USDC });
      const org = await createOrg(t.app, { payoutAddress: wallet.address });
      const check = await t.http.post('/api/v1/verification/checkout').set('X-Api-Key', org.key);
      expect(check.status).toBe(200);
      const txHash = await chain.usdcTransfer(wallet, check.body.payTo as string, parseAmount(check.body.amount as string));
      const confirm = () =>
        t.http.post('/api/v1/verification/confirm').set('X-Api-Key', org.key).set('Idempotency-Key', randomUUID()).send({ txHash }).then((r) => ({ status: r.status, body: r.body as Record<string, unknown> }));
      // Connections of other clients of this database already idle in a transaction are not ours to count.
      const before = await idleInTransaction(pg);
      gate.close();
      let pending: Array<Promise<{ status: number; body: Record<string, unknown> }>> = [];
      try {
        pending = Array.from({ length: POOL + EXTRA }, confirm);
        await waitFor(async () => gate.held >= POOL, { timeoutMs: 10_000, label: `${POOL} confirms at the node` });
        expect(await idleInTransaction(pg)).toBe(before);
        const other = await createOrg(t.app);
        const unrelated = await within(5_000, t.http.post('/api/v1/checkout-sessions').set('X-Api-Key', other.key).send({ amount: '1', description: 'unrelated' }), 'an unrelated create');
        expect(unrelated.status).toBe(200);
        expect(await idleInTransaction(pg)).toBe(before);
      } finally {
        gate.open();
      }
      const results = await Promise.all(pending);
      expect(results.map((r) => r.status)).toEqual(Array(POOL + EXTRA).fill(200));
      expect(results.every((r) => (r.body.wallet as Record<string, unknown>).status === 'verified')).toBe(true);
    });
  });

  describe('escrow actions: chain verification', () => {
    let t: TestApp;
    let gate: RpcGate;
    let chain: TestChain;
    let seller: Party;
    let buyer: Party;
    let other: TestOrg;

    beforeAll(async () => {
      gate = await RpcGate.start(process.env.RPC_URL!);
      t = await createTestApp({ RPC_URL: gate.url, RPC_TIMEOUT_MS: '1500' });
      chain = new TestChain();
      ({ seller, buyer } = await createParties(t, chain, 1_000n * USDC));
      other = await createOrg(t.app);
    });
    afterAll(async () => {
      chain?.close();
      await gate?.stop();
      await t?.close();
    });

    async function fundedEscrow(): Promise<{ escrowId: string; key: string }> {
      const checkout = await createCheckout(t, seller.org, { amount: '2.00' });
      await fundOnChain(t, chain, checkout.id, buyer.wallet);
      const escrowId = (await indexUntilStatus(t, seller.org, checkout.id, 'funded')).escrowId as string;
      const key = (await t.http.get(`/api/v1/escrows/${escrowId}`).set('X-Api-Key', seller.org.key)).body.chain.escrowKey as string;
      return { escrowId, key };
    }

    const accept = (escrowId: string, txHash: string, key: string) =>
      t.http.post(`/api/v1/escrows/${escrowId}/accept`).set('X-Api-Key', seller.org.key).set('Idempotency-Key', key).send({ txHash });

    it(`${POOL + EXTRA} concurrent keyed actions waiting on a slow node hold no connection and do not block an unrelated create`, async () => {
      const { escrowId, key } = await fundedEscrow();
      const txHash = await chain.act(seller.wallet, 'accept', key);
      // Connections of other clients of this database already idle in a transaction are not ours to count.
      const before = await idleInTransaction(pg);
      gate.close();
      let pending: Array<Promise<{ status: number; body: Record<string, unknown> }>> = [];
      try {
        pending = Array.from({ length: POOL + EXTRA }, () => accept(escrowId, txHash, randomUUID()).then((r) => ({ status: r.status, body: r.body })));
        await waitFor(async () => gate.held >= POOL, { timeoutMs: 10_000, label: `${POOL} actions at the node` });
        expect(await idleInTransaction(pg)).toBe(before);
        const unrelated = await within(5_000, t.http.post('/api/v1/checkout-sessions').set('X-Api-Key', other.key).send({ amount: '1', description: 'unrelated' }), 'an unrelated create');
        expect(unrelated.status).toBe(200);
        // Every action is at the node at once: none waits for a pooled connection first.
        await waitFor(async () => gate.held >= POOL + EXTRA, { timeoutMs: 5_000, label: `all ${POOL + EXTRA} actions at the node` });
        expect(await idleInTransaction(pg)).toBe(before);
      } finally {
        gate.open();
      }
      const results = await Promise.all(pending);
      expect(results.map((r) => `${r.status} ${String(r.body.status)}`)).toEqual(Array(POOL + EXTRA).fill('200 accepted'));
      expect((await chainEventRows(t, escrowId)).filter((e) => e.tx_hash === txHash.toLowerCase())).toHaveLength(1);
    });

    it('a node that never answers: 503 after RPC_TIMEOUT_MS, not stored; the same key succeeds once the node answers', async () => {
      const { escrowId, key } = await fundedEscrow();
      const txHash = await chain.act(seller.wallet, 'accept', key);
      const idemKey = randomUUID();
      gate.hold();
      const started = Date.now();
      let res;
      try {
        res = await accept(escrowId, txHash, idemKey);
      } finally {
        gate.open();
      }
      const elapsed = Date.now() - started;
      // Issue 29 finding 5: the code is `unavailable` (it was `internal`), after one retry of the read.
      expect(expectError(res, 503, 'unavailable')).toMatchObject({ reason: 'chain_unavailable' });
      expect(res.headers['retry-after']).toBe('2');
      expect(elapsed).toBeGreaterThanOrEqual(1_400);
      expect(elapsed).toBeLessThan(10_000);
      expect((await pg.query('SELECT 1 FROM idempotency_records WHERE idempotency_key = $1', [idemKey])).rowCount).toBe(0);
      const retry = await accept(escrowId, txHash, idemKey);
      expect(retry.status).toBe(200);
      expect(retry.headers['idempotent-replayed']).toBe('false');
      expect(retry.body.status).toBe('accepted');
    });

    it('an escrow action refusal keeps its precedence with the chain check moved out: 404 → 403 → 409 state before any RPC', async () => {
      const { escrowId } = await fundedEscrow();
      const randomHash = `0x${randomBytes(32).toString('hex')}`;
      gate.hold();
      const received = gate.received;
      try {
        // None of these reaches the node, so none waits for it.
        const notFound = await within(3_000, t.http.post(`/api/v1/escrows/${randomUUID()}/accept`).set('X-Api-Key', seller.org.key).set('Idempotency-Key', randomUUID()).send({ txHash: randomHash }), '404');
        expectError(notFound, 404, 'not_found');
        const wrongParty = await within(3_000, t.http.post(`/api/v1/escrows/${escrowId}/accept`).set('X-Api-Key', buyer.org.key).set('Idempotency-Key', randomUUID()).send({ txHash: randomHash }), '403');
        expectError(wrongParty, 403, 'forbidden');
        const state = await within(3_000, t.http.post(`/api/v1/escrows/${escrowId}/mark-delivered`).set('X-Api-Key', seller.org.key).set('Idempotency-Key', randomUUID()).send({ txHash: randomHash }), '409');
        expectError(state, 409, 'invalid_request');
        expect(gate.received).toBe(received);
      } finally {
        gate.open();
      }
    });
  });

  describe('checkout create: webhookUrl DNS check', () => {
    let t: TestApp;
    let resolver: GatedResolver;
    let org: TestOrg;
    let other: TestOrg;

    beforeAll(async () => {
      t = await createTestApp({ WEBHOOK_ALLOW_PRIVATE: 'false', WEBHOOK_DNS_TIMEOUT_MS: '1500' });
      resolver = new GatedResolver();
      const port = t.app.get(HostResolver);
      jest.spyOn(port, 'resolve').mockImplementation(() => resolver.resolve());
      org = await createOrg(t.app);
      other = await createOrg(t.app);
    });
    afterAll(async () => {
      resolver?.open();
      await t?.close();
    });

    const create = (o: TestOrg, body: object, key?: string) => {
      const req = t.http.post('/api/v1/checkout-sessions').set('X-Api-Key', o.key);
      if (key) req.set('Idempotency-Key', key);
      return req.send(body);
    };

    it(`${POOL + EXTRA} concurrent keyed creates waiting on slow DNS hold no connection and do not block an unrelated create`, async () => {
      // Connections of other clients of this database already idle in a transaction are not ours to count.
      const before = await idleInTransaction(pg);
      resolver.close();
      let pending: Array<Promise<{ status: number; body: Record<string, unknown> }>> = [];
      try {
        pending = Array.from({ length: POOL + EXTRA }, (_, i) =>
          create(org, { amount: '3', description: `slow dns ${i}`, webhookUrl: 'https://hooks.example.com/pcp' }, randomUUID()).then((r) => ({ status: r.status, body: r.body })),
        );
        await waitFor(async () => resolver.held >= POOL, { timeoutMs: 10_000, label: `${POOL} creates at DNS` });
        expect(await idleInTransaction(pg)).toBe(before);
        const unrelated = await within(5_000, create(other, { amount: '1', description: 'unrelated' }), 'an unrelated create');
        expect(unrelated.status).toBe(200);
        await waitFor(async () => resolver.held >= POOL + EXTRA, { timeoutMs: 5_000, label: `all ${POOL + EXTRA} creates at DNS` });
        expect(await idleInTransaction(pg)).toBe(before);
      } finally {
        resolver.open();
      }
      const results = await Promise.all(pending);
      expect(results.map((r) => r.status)).toEqual(Array(POOL + EXTRA).fill(200));
      expect(await countSessions(t.dataSource, org.organizationId)).toBe(POOL + EXTRA);
    });

    it('DNS that never answers: 400 unresolvable after WEBHOOK_DNS_TIMEOUT_MS, not stored', async () => {
      const idemKey = randomUUID();
      const body = { amount: '4', description: 'dns timeout', webhookUrl: 'https://never.example.com/hook' };
      resolver.close();
      const started = Date.now();
      let res;
      try {
        res = await create(org, body, idemKey);
      } finally {
        resolver.open();
      }
      const elapsed = Date.now() - started;
      expect(expectError(res, 400, 'invalid_request')).toMatchObject({ reason: 'unresolvable', param: 'webhookUrl' });
      expect(elapsed).toBeGreaterThanOrEqual(1_400);
      expect(elapsed).toBeLessThan(10_000);
      const retry = await create(org, body, idemKey);
      expect(retry.status).toBe(200);
      expect(retry.headers['idempotent-replayed']).toBe('false');
    });
  });
});
