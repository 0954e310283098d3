import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Reconciliation reads payments and x402 settlements that ended in the last 7 days in bounded
 * batches from a cursor (issue 33 §1, DESIGN §23): each batch is a range scan of these partial
 * indexes in (updated_at, id) order from the cursor, so its cost does not grow with the table.
 * Its escrow reads had no index either: the held sum (one aggregate) scanned every escrow and the
 * escrow batch (held, or changed in the last 7 days) walked the primary key through every older
 * escrow. The held escrows get a partial index carrying their amount (the sum is an index-only
 * scan of the held ones), and `updated_at` an index, so the batch reads the held and recently
 * changed escrows (the open backlog), not the table.
 */
export class ReconcileBatches1795819654293 implements MigrationInterface {
  name = 'ReconcileBatches1795819654293';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX payments_reconcile_idx ON payments (updated_at, id) WHERE status IN ('succeeded', 'failed') AND auth_nonce IS NOT NULL`);
    await q.query(`CREATE INDEX x402_settlements_reconcile_idx ON x402_settlements (updated_at, id) WHERE status IN ('settled', 'succeeded', 'failed')`);
    await q.query(`CREATE INDEX escrows_held_idx ON escrows (id) INCLUDE (amount_units) WHERE status IN ('funded', 'accepted', 'delivered', 'disputed')`);
    await q.query(`CREATE INDEX escrows_updated_at_idx ON escrows (updated_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX escrows_updated_at_idx`);
    await q.query(`DROP INDEX escrows_held_idx`);
    await q.query(`DROP INDEX x402_settlements_reconcile_idx`);
    await q.query(`DROP INDEX payments_reconcile_idx`);
  }
}
