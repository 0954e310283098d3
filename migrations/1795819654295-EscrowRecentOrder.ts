import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Reconciliation's batch of escrows changed in the last 7 days is read in (updated_at, id) order
 * from a cursor (issue 33, DESIGN §23), apart from the held escrows' batch: the two were one `OR`,
 * a bitmap of every row matching either side sorted by id, whose reads grew with the escrows changed
 * in the window. An index on `updated_at` alone would read every row sharing the cursor's
 * `updated_at` (one transaction's changes share `now()`) to sort them by id; `(updated_at, id)`
 * makes the batch a range scan that stops at its limit. It replaces `escrows_updated_at_idx`, which
 * served only that read.
 */
export class EscrowRecentOrder1795819654295 implements MigrationInterface {
  name = 'EscrowRecentOrder1795819654295';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX escrows_recent_idx ON escrows (updated_at, id)`);
    await q.query(`DROP INDEX escrows_updated_at_idx`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX escrows_updated_at_idx ON escrows (updated_at)`);
    await q.query(`DROP INDEX escrows_recent_idx`);
  }
}
