import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { createTestApp, TestApp } from '../support/app';
import { createCheckout, createParties, fundOnChain, indexUntilStatus, Party, TestChain, USDC } from '../support/chain';
import { countIdempotencyRecords, countSessions } from '../support/errors';
import { createOrg, TestOrg } from '../support/factories';

const ROUNDS = Number(process.env.IDEMPOTENCY_RACE_ROUNDS ?? 2000);
const REFUSAL_ROUNDS = Math.ceil(ROUNDS / 4);
const TWINS = 10;

jest.setTimeout(240_000);

/**
 * Twins racing on one Idempotency-Key through the real HTTP app (docs/architecture.md §5): in
 * every round, TWINS identical checkout creates are sent at once under a fresh key. At most one
 * may execute; the others replay it or get 409 in_progress. A twin that read the record before
 * the first committed and took the lock after it would create a second session.
 */
describe('idempotency under concurrent twins', () => {
  let t: TestApp;
  let base: string;
  let org: TestOrg;

  beforeAll(async () => {
    t = await createTestApp();
    await t.app.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}`;
    org = await createOrg(t.app);
  });
  afterAll(() => t.close());

  it(`${ROUNDS} rounds of ${TWINS} concurrent same-key checkout creates: never two sessions for one key`, async () => {
    const body = JSON.stringify({ amount: '1.00', description: 'twins' });
    const send = (key: string) =>
      fetch(`${base}/api/v1/checkout-sessions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': org.key, 'idempotency-key': key },
        body,
      }).then(async (r) => ({ status: r.status, replayed: r.headers.get('idempotent-replayed'), retryAfter: r.headers.get('retry-after'), body: (await r.json()) as Record<string, unknown> }));

    let duplicates = 0;
    let roundsWithASession = 0;
    const unexpected: string[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const key = randomUUID();
      const responses = await Promise.all(Array.from({ length: TWINS }, () => send(key)));
      const ids = new Set<string>();
      let originals = 0;
      for (const r of responses) {
        if (r.status === 200) {
          ids.add(r.body.id as string);
          if (r.replayed === 'false') originals++;
        } else if (!(r.status === 409 && (r.body.details as { reason?: string })?.reason === 'in_progress' && r.retryAfter === '1')) {
          unexpected.push(`${r.status} ${JSON.stringify(r.body)}`);
        }
      }
      if (ids.size > 1 || originals > 1) duplicates++;
      if (ids.size > 0) roundsWithASession++;
    }
    const sessions = await countSessions(t.dataSource, org.organizationId);
    // Printed so the before/after figure is on record in the test output.
    console.log(`idempotency race: ${duplicates} duplicate rounds, ${sessions} sessions for ${ROUNDS} keys`);
    expect(unexpected.slice(0, 5)).toEqual([]);
    expect(duplicates).toBe(0);
    // Exactly one execution per key: one session and one record each, and every round answered 200 at least once.
    expect(roundsWithASession).toBe(ROUNDS);
    expect(sessions).toBe(ROUNDS);
    expect(await countIdempotencyRecords(t.dataSource, org.organizationId)).toBe(ROUNDS);
  });

  it(`${REFUSAL_ROUNDS} rounds of ${TWINS} concurrent same-key refused releases: the refusal is recorded once, by the one execution`, async () => {
    const chain = new TestChain();
    let seller: Party;
    let escrowId: string;
    try {
      let buyer: Party;
      ({ seller, buyer } = await createParties(t, chain, 10n * USDC));
      const checkout = await createCheckout(t, seller.org, { amount: '1.00' });
      await fundOnChain(t, chain, checkout.id, buyer.wallet);
      escrowId = (await indexUntilStatus(t, seller.org, checkout.id, 'funded')).escrowId as string;
    } finally {
      chain.close();
    }
    // The seller may not release: 403 forbidden, a stored business refusal (docs/architecture.md §5).
    const body = JSON.stringify({ txHash: `0x${'cd'.repeat(32)}`, confirm: true });
    const send = (key: string) =>
      fetch(`${base}/api/v1/escrows/${escrowId}/release`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': seller.org.key, 'idempotency-key': key },
        body,
      }).then(async (r) => ({ status: r.status, replayed: r.headers.get('idempotent-replayed'), body: (await r.json()) as { code: string; details?: { reason?: string } } }));

    let twice = 0;
    const unexpected: string[] = [];
    for (let round = 0; round < REFUSAL_ROUNDS; round++) {
      const key = randomUUID();
      const twins = await Promise.all(Array.from({ length: TWINS }, () => send(key)));
      let originals = 0;
      for (const r of twins) {
        if (r.status === 403 && r.body.code === 'forbidden') {
          if (r.replayed === 'false') originals++;
        } else if (!(r.status === 409 && r.body.details?.reason === 'in_progress')) {
          unexpected.push(`${r.status} ${JSON.stringify(r.body)}`);
        }
      }
      if (originals !== 1) twice++;
    }
    console.log(`idempotency refusal race: ${twice} rounds without exactly one first refusal in ${REFUSAL_ROUNDS}`);
    expect(unexpected.slice(0, 5)).toEqual([]);
    expect(twice).toBe(0);
    const [{ n }] = (await t.dataSource.query('SELECT count(*)::int AS n FROM idempotency_records WHERE organization_id = $1 AND response_status = 403', [seller!.org.organizationId])) as Array<{ n: number }>;
    expect(n).toBe(REFUSAL_ROUNDS);
  });
});
