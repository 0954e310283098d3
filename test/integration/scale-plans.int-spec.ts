import { randomUUID } from 'node:crypto';
import type { Logger as TypeOrmLogger } from 'typeorm';
import { TransactionHost, TxHost } from '../../src/database/transaction';
import { IdempotencyRepository } from '../../src/kernel/idempotency/idempotency.repository';
import { ReconciliationRepository } from '../../src/chain/reconciliation/reconciliation.repository';
import { CheckoutRepository } from '../../src/modules/checkout/checkout.repository';
import { EscrowRepository } from '../../src/modules/escrow/escrow.repository';
import { PaymentsRepository } from '../../src/modules/payments/payments.repository';
import { BalanceRepository } from '../../src/modules/balance/balance.repository';
import { OutboxRepository } from '../../src/common/outbox/outbox.repository';
import { WebhookDeliveriesRepository } from '../../src/modules/webhooks/webhook-deliveries.repository';
import { createTestApp, TestApp } from '../support/app';
import { createAgentKey, createOrg, TestOrg } from '../support/factories';

jest.setTimeout(180_000);

/** One node of EXPLAIN (FORMAT JSON). */
interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  Plans?: PlanNode[];
}
const nodes = (n: PlanNode): PlanNode[] => [n, ...(n.Plans ?? []).flatMap(nodes)];

/**
 * DESIGN §23: a request's or a pass batch's cost must not grow with its table. Each statement the
 * code issues (captured from TypeORM as it runs, not a copy) is EXPLAIN ANALYZEd over an
 * organisation with 20,000 rows per table beside another with as many: no sequential scan of the
 * big table, and no scan node of it reads more rows than the page or batch needs.
 * Failed before the fixes: the escrows list (a BitmapOr of the seller and buyer indexes read every
 * escrow of the organisation, then sorted them), the idempotency reaper (one DELETE of every
 * expired record) and the webhook retention batch (its DELETEs joined the batch by a sequential
 * scan of outbox_events and webhook_deliveries).
 */
describe('statements stay index-bounded as tables grow (DESIGN §23)', () => {
  let t: TestApp;
  let org: TestOrg;
  let agentId: string;
  const ROWS = 20_000;
  let captured: Array<{ sql: string; params: unknown[] }> = [];
  let seeded: string[] = [];

  beforeAll(async () => {
    t = await createTestApp();
    org = await createOrg(t.app);
    const other = await createOrg(t.app);
    seeded = [org.organizationId, other.organizationId];
    ({ agentId } = await createAgentKey(t.app, org.organizationId, ['agent:pay']));
    const q = (sql: string, params: unknown[]) => t.dataSource.query(sql, params);
    for (const o of [org.organizationId, other.organizationId]) {
      const series = `SELECT g, now() - random() * interval '365 days' AS t FROM generate_series(1, ${ROWS}) g`;
      await q(
        `INSERT INTO checkout_sessions (id, organization_id, amount_units, description, status, escrow_template_id, expires_at, created_at)
         SELECT gen_random_uuid(), $1::uuid, 1000000, 'o', 'released', 'custom', t + interval '1 day', t FROM (${series}) s`,
        [o],
      );
      await q(
        `INSERT INTO escrows (id, escrow_key, status, buyer_address, seller_address, buyer_organization_id, seller_organization_id, amount_units, escrow_template_id, inspection_window_seconds, created_at)
         SELECT gen_random_uuid(), 'plan' || md5($1::text || g), 'released', '0x', '0x', CASE WHEN g % 2 = 0 THEN $1::uuid END, CASE WHEN g % 2 = 1 THEN $1::uuid END, 1, 'custom', 60, t FROM (${series}) s`,
        [o],
      );
      await q(
        `INSERT INTO idempotency_records (id, scope_hash, idempotency_key, organization_id, method, path, fingerprint, response_status, response_body, created_at, expires_at)
         SELECT gen_random_uuid(), md5($1::text), 'plan-' || g, $1::uuid, 'POST', '/x', 'f', 200, '{}', t, t + interval '1 day' FROM (${series}) s`,
        [o],
      );
      await q(
        `WITH ev AS (INSERT INTO outbox_events (id, organization_id, type, data, created_at, relayed_at)
                     SELECT gen_random_uuid(), $1::uuid, 'checkout.funded', '{}', t, t FROM (${series}) s RETURNING id, created_at)
         INSERT INTO webhook_deliveries (id, event_id, organization_id, event_type, url, status, target, created_at)
         SELECT gen_random_uuid(), id, $1::uuid, 'checkout.funded', 'http://127.0.0.1:9/', 'succeeded', 'endpoint', created_at FROM ev`,
        [o],
      );
      // The ledger as the projector writes it (random UUIDv5-like ids, block time = the movement's time, all four kinds).
      await q(
        `INSERT INTO balance_transactions (id, organization_id, type, amount, source_type, source_id, tx_hash, log_index, block_number, block_timestamp, cursor)
         SELECT gen_random_uuid(), $1::uuid, (ARRAY['escrow_release', 'payment', 'x402', 'refund'])[1 + g % 4], CASE WHEN g % 4 = 3 THEN -1 ELSE 1 END,
                'payment', gen_random_uuid(), 'plan' || md5($1::text || g), g % 3, (extract(epoch FROM t) / 2)::bigint, t, 'escrow' FROM (${series}) s`,
        [o],
      );
    }
    await q(
      `INSERT INTO payments (id, agent_id, organization_id, idempotency_key, fingerprint, status, mode, to_handle, to_address, from_address, amount, created_at, updated_at)
       SELECT gen_random_uuid(), $1, $2, 'plan-' || g, 'f', CASE WHEN g % 100 = 0 THEN 'pending' ELSE 'succeeded' END, 'instant', 'p', '0x', '0x', 1, t, t
         FROM (SELECT g, now() - random() * interval '365 days' AS t FROM generate_series(1, $3) g) s`,
      [agentId, org.organizationId, 2 * ROWS],
    );
    await q(`ANALYZE checkout_sessions, escrows, idempotency_records, outbox_events, webhook_deliveries, payments, balance_transactions`, []);
    const logger: TypeOrmLogger = {
      logQuery: (sql, params) => void captured.push({ sql, params: (params ?? []) as unknown[] }),
      logQueryError: () => {},
      logQuerySlow: () => {},
      logSchemaBuild: () => {},
      logMigration: () => {},
      log: () => {},
    };
    (t.dataSource as unknown as { logger: TypeOrmLogger }).logger = logger;
  });
  // The seeded rows are fake (escrow keys that are not bytes32, payments to '0x'): the run's later files
  // share this database, and reconciliation there reads every escrow and payment, so they go.
  afterAll(async () => {
    if (!t) return;
    // Nothing references the seeded rows, so the deletes skip the foreign-key triggers (row by row they took minutes).
    await t.dataSource.transaction(async (m) => {
      await m.query(`SET LOCAL session_replication_role = replica`);
      await m.query(`DELETE FROM payments WHERE agent_id = $1`, [agentId]);
      for (const sql of [
        `DELETE FROM webhook_deliveries WHERE organization_id = ANY($1::uuid[])`,
        `DELETE FROM outbox_events WHERE organization_id = ANY($1::uuid[])`,
        `DELETE FROM idempotency_records WHERE organization_id = ANY($1::uuid[])`,
        `DELETE FROM escrows WHERE seller_organization_id = ANY($1::uuid[]) OR buyer_organization_id = ANY($1::uuid[])`,
        `DELETE FROM checkout_sessions WHERE organization_id = ANY($1::uuid[])`,
        `DELETE FROM balance_transactions WHERE organization_id = ANY($1::uuid[])`,
      ])
        await m.query(sql, [seeded]);
    });
    await t.close();
  }, 120_000);

  /**
   * Runs `fn`, EXPLAIN ANALYZEs (rolled back) the first statement it issued on `table` (the first also
   * matching `pick` when given), and returns the plan's nodes.
   */
  async function planOf(table: string, fn: () => Promise<unknown>, pick?: RegExp): Promise<PlanNode[]> {
    captured = [];
    await fn();
    const stmt = captured.find(
      (c) => new RegExp(`\\b(FROM|INTO|UPDATE)\\s+"?${table}"?\\b`, 'i').test(c.sql) && !/^\s*(BEGIN|COMMIT|ROLLBACK)/i.test(c.sql) && (!pick || pick.test(c.sql)),
    );
    if (!stmt) throw new Error(`no statement on ${table} among: ${captured.map((c) => c.sql.slice(0, 80)).join(' | ')}`);
    const runner = t.dataSource.createQueryRunner();
    try {
      await runner.startTransaction();
      const [row] = (await runner.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${stmt.sql}`, stmt.params)) as Array<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>;
      return nodes(row['QUERY PLAN'][0].Plan);
    } finally {
      await runner.rollbackTransaction();
      await runner.release();
    }
  }

  /** No Seq Scan of `table`, and no scan node of it returning more than `bound` rows in all its loops. */
  function expectBounded(plan: PlanNode[], table: string, bound: number) {
    const scans = plan.filter((n) => n['Relation Name'] === table);
    expect(scans.length).toBeGreaterThan(0);
    expect(scans.map((n) => n['Node Type'])).not.toContain('Seq Scan');
    const read = Math.max(...scans.map((n) => (n['Actual Rows'] ?? 0) * (n['Actual Loops'] ?? 1)));
    if (read > bound) throw new Error(`${table}: a scan read ${read} rows (bound ${bound}): ${scans.map((n) => `${n['Node Type']} ${n['Index Name'] ?? ''} ${n['Actual Rows']}x${n['Actual Loops']}`).join('; ')}`);
  }

  const withTx = <T>(fn: () => Promise<T>) => (t.app.get(TransactionHost) as TxHost).withTransaction(fn);

  it('escrows list, first page and a later page: two index branches, at most limit + 1 rows each', async () => {
    const escrows = t.app.get(EscrowRepository);
    const first = await planOf('escrows', () => withTx(() => escrows.list(org.organizationId, { limit: 10 })));
    expectBounded(first, 'escrows', 2 * 11);
    expect(first.map((n) => n['Index Name'])).toEqual(expect.arrayContaining(['escrows_seller_org_idx', 'escrows_buyer_org_idx']));
    const page = await withTx(() => escrows.list(org.organizationId, { limit: 10 }));
    const deeper = await planOf('escrows', () => withTx(() => escrows.list(org.organizationId, { limit: 10, startingAfter: page[9].id })));
    expectBounded(deeper, 'escrows', 2 * 11 + 2);
  });

  it('escrows list pages walk every escrow of both roles once, newest first', async () => {
    const escrows = t.app.get(EscrowRepository);
    const all: Array<{ id: string; createdAt: Date }> = await t.dataSource.query(
      `SELECT id, created_at AS "createdAt" FROM escrows WHERE seller_organization_id = $1 OR buyer_organization_id = $1 ORDER BY created_at DESC, id DESC LIMIT 250`,
      [org.organizationId],
    );
    const walked: string[] = [];
    let cursor: string | undefined;
    while (walked.length < 250) {
      const rows = await withTx(() => escrows.list(org.organizationId, { limit: 50, startingAfter: cursor }));
      walked.push(...rows.slice(0, 50).map((r) => r.id));
      cursor = rows[49].id;
    }
    expect(walked).toEqual(all.map((r) => r.id));
    await expect(withTx(() => escrows.list(org.organizationId, { limit: 10, startingAfter: randomUUID() }))).rejects.toMatchObject({ code: 'invalid_request' });
  });

  it('checkout list 20 pages deep, deliveries list and agent payments list read one page each', async () => {
    const checkout = t.app.get(CheckoutRepository);
    let cursor: string | undefined;
    for (let i = 0; i < 20; i++) cursor = (await withTx(() => checkout.list(org.organizationId, 10, cursor)))[9].id;
    expectBounded(await planOf('checkout_sessions', () => withTx(() => checkout.list(org.organizationId, 10, cursor))), 'checkout_sessions', 11 + 1);
    const webhooks = t.app.get(WebhookDeliveriesRepository);
    expectBounded(
      await planOf('webhook_deliveries', () => withTx(() => webhooks.listDeliveries(org.organizationId, 10, undefined, {}))),
      'webhook_deliveries',
      11,
    );
    const payments = t.app.get(PaymentsRepository);
    expectBounded(await planOf('payments', () => withTx(() => payments.list(agentId, { limit: 10 }))), 'payments', 11);
  });

  it('balance transactions list, first page, 20 pages deep and by type: one index range scan of at most limit + 1 rows (issue 33)', async () => {
    const ledger = t.app.get(BalanceRepository);
    const list = /ORDER BY/i;
    const first = await planOf('balance_transactions', () => withTx(() => ledger.list(org.organizationId, 10, undefined, {})), list);
    expectBounded(first, 'balance_transactions', 11);
    expect(first.map((n) => n['Index Name'])).toContain('balance_transactions_org_order');
    let cursor: string | undefined;
    for (let i = 0; i < 20; i++) cursor = (await withTx(() => ledger.list(org.organizationId, 10, cursor, {})))[9].id;
    expectBounded(await planOf('balance_transactions', () => withTx(() => ledger.list(org.organizationId, 10, cursor, {})), list), 'balance_transactions', 11);
    const byType = await planOf('balance_transactions', () => withTx(() => ledger.list(org.organizationId, 10, cursor, { type: 'refund' })), list);
    expectBounded(byType, 'balance_transactions', 11);
    expect(byType.map((n) => n['Index Name'])).toContain('balance_transactions_org_type_order');
  });

  it('deleting an escrow (a reorg took back its creation) finds its checkout session by index: the foreign key action scans nothing (issue 33)', async () => {
    // The statement PostgreSQL runs for `checkout_sessions.escrow_id … ON DELETE SET NULL`, per deleted escrow.
    const runner = t.dataSource.createQueryRunner();
    try {
      await runner.startTransaction();
      const [row] = (await runner.query(`EXPLAIN (ANALYZE, FORMAT JSON) UPDATE ONLY checkout_sessions SET escrow_id = NULL WHERE $1 = escrow_id`, [randomUUID()])) as Array<{
        'QUERY PLAN': Array<{ Plan: PlanNode }>;
      }>;
      expectBounded(nodes(row['QUERY PLAN'][0].Plan), 'checkout_sessions', 1);
    } finally {
      await runner.rollbackTransaction();
      await runner.release();
    }
  });

  it('pass batches: idempotency reaper, outbox claim, payment sweep read their batch only', async () => {
    const idem = t.app.get(IdempotencyRepository);
    const reaper = await planOf('idempotency_records', () => withTx(() => idem.deleteExpiredBatch(500)));
    expectBounded(reaper, 'idempotency_records', 500);
    // The batch's rows deleted by address, not looked up again by primary key.
    expect(reaper.filter((n) => n['Relation Name'] === 'idempotency_records').map((n) => n['Node Type'])).toContain('Tid Scan');
    await t.dataSource.query(
      `INSERT INTO outbox_events (id, organization_id, type, data) SELECT gen_random_uuid(), $1, 'checkout.funded', '{}' FROM generate_series(1, 3000)`,
      [org.organizationId],
    );
    await t.dataSource.query('ANALYZE outbox_events');
    const outbox = t.app.get(OutboxRepository);
    expectBounded(await planOf('outbox_events', () => withTx(() => outbox.claimPending(100))), 'outbox_events', 100);
    await t.dataSource.query(`DELETE FROM outbox_events WHERE relayed_at IS NULL AND organization_id = $1`, [org.organizationId]);
    const payments = t.app.get(PaymentsRepository);
    expectBounded(await planOf('payments', () => withTx(() => payments.idle(new Date(), 100))), 'payments', 100);
  });

  it('reconciliation batches: ended payments and x402 settlements read one batch from their cursor (issue 33)', async () => {
    const recon = new ReconciliationRepository(t.dataSource, t.app.get(TransactionHost));
    const payer = `0xplan${process.pid}`;
    // 5,000 ended payments and settlements in the last 7 days, beside the 40,000 older ones seeded above.
    await t.dataSource.query(
      `INSERT INTO payments (id, agent_id, organization_id, idempotency_key, fingerprint, status, mode, to_handle, to_address, from_address, amount, auth_nonce, auth_signature, created_at, updated_at)
       SELECT gen_random_uuid(), $1, $2, 'plan-ended-' || g, 'f', CASE WHEN g % 5 = 0 THEN 'failed' ELSE 'succeeded' END, 'instant', 'p', '0x', '0x', 1, md5('plan-ended' || g), '0x00',
              now() - random() * interval '6 days', now() - random() * interval '6 days'
         FROM generate_series(1, 5000) g`,
      [agentId, org.organizationId],
    );
    await t.dataSource.query(
      `INSERT INTO x402_settlements (id, payer, nonce, pay_to, payee_handle, amount, resource, status, created_at, updated_at)
       SELECT gen_random_uuid(), $1, md5('plan' || g), '0x', 'p', 1, '/x', 'settled', now() - random() * interval '365 days', now() - random() * interval '365 days'
         FROM generate_series(1, 20000) g`,
      [payer],
    );
    await t.dataSource.query(`UPDATE x402_settlements SET updated_at = now() - random() * interval '6 days' WHERE payer = $1 AND random() < 0.25`, [payer]);
    await t.dataSource.query('ANALYZE payments, x402_settlements');
    try {
      const first = await planOf('payments', () => recon.terminalPayments(7, null, 100));
      expectBounded(first, 'payments', 100);
      const page = await recon.terminalPayments(7, null, 100);
      expect(page).toHaveLength(100);
      expectBounded(await planOf('payments', () => recon.terminalPayments(7, page[99].cursor, 100)), 'payments', 100);
      // The next batch starts after the last row of this one, in (updated_at, id) order.
      const next = await recon.terminalPayments(7, page[99].cursor, 100);
      expect(new Set([...page, ...next].map((r) => r.id)).size).toBe(200);
      expectBounded(await planOf('x402_settlements', () => recon.terminalSettlements(7, null, 100)), 'x402_settlements', 100);
    } finally {
      await t.dataSource.query(`DELETE FROM x402_settlements WHERE payer = $1`, [payer]);
    }
  });

  it('reconciliation escrow batches: the held ones and those changed in the window, each one batch from its own cursor (issue 33)', async () => {
    const recon = new ReconciliationRepository(t.dataSource, t.app.get(TransactionHost));
    // The 40,000 escrows seeded above all changed at one instant (one statement's now(): ties on
    // updated_at, as one transaction's changes have), inside the window; one in 20 of them held.
    await t.dataSource.query(`UPDATE escrows SET status = 'funded' WHERE seller_organization_id = ANY($1::uuid[]) AND random() < 0.05`, [seeded]);
    await t.dataSource.query('ANALYZE escrows');
    expectBounded(await planOf('escrows', () => recon.heldEscrows('', 100)), 'escrows', 100);
    const held = await recon.heldEscrows('', 100);
    expect(held).toHaveLength(100);
    expectBounded(await planOf('escrows', () => recon.heldEscrows(held[99].id, 100)), 'escrows', 100);
    expectBounded(await planOf('escrows', () => recon.recentEscrows(7, null, 100)), 'escrows', 100);
    const recent = await recon.recentEscrows(7, null, 100);
    expect(recent).toHaveLength(100);
    expectBounded(await planOf('escrows', () => recon.recentEscrows(7, recent[99].cursor, 100)), 'escrows', 100);
    // The next batch starts after the last row of this one, in (updated_at, id) order, ties included.
    const next = await recon.recentEscrows(7, recent[99].cursor, 100);
    expect(new Set([...recent, ...next].map((r) => r.id)).size).toBe(200);
  });

  it('a webhook retention batch locks its events, then deletes them and their deliveries, without scanning either table', async () => {
    const outbox = t.app.get(OutboxRepository);
    const deliveries = t.app.get(WebhookDeliveriesRepository);
    expectBounded(await planOf('outbox_events', () => withTx(() => outbox.lockExpired(30, 500, null))), 'outbox_events', 500);
    expectBounded(await planOf('outbox_events', () => withTx(() => outbox.lockExpired(30, 500, '1970-01-01 00:00:00+00'))), 'outbox_events', 500);
    const ids = Array.from({ length: 500 }, () => randomUUID());
    expectBounded(await planOf('webhook_deliveries', () => withTx(() => deliveries.eventsInFlight(ids))), 'webhook_deliveries', 500);
    expectBounded(await planOf('webhook_deliveries', () => withTx(() => deliveries.deleteForEvents(ids))), 'webhook_deliveries', 500);
    expectBounded(await planOf('outbox_events', () => withTx(() => outbox.deleteEvents(ids))), 'outbox_events', 500);
  });
});
