import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * An index on checkout_sessions.escrow_id (issue 33, DESIGN §23). The foreign key's
 * `ON DELETE SET NULL` runs `UPDATE checkout_sessions SET escrow_id = NULL WHERE escrow_id = $1` for
 * every deleted escrow (the projector deletes an escrow whose creation a reorg took back); without
 * an index each delete scanned every checkout session (found by `bench/scale.mjs` at 1M rows, where
 * deleting 10k escrows did not finish in 10 minutes). Partial: a session without an escrow is never looked up by it.
 */
export class CheckoutEscrowIndex1795819654294 implements MigrationInterface {
  name = 'CheckoutEscrowIndex1795819654294';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX checkout_sessions_escrow_idx ON checkout_sessions (escrow_id) WHERE escrow_id IS NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX checkout_sessions_escrow_idx`);
  }
}
