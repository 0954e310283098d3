import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Escrow integrity (issue 7): a flag on escrows whose Funded terms differ from their checkout
 * (`flag`, `flag_details`), and the chain events the ledger could not apply, set aside so one bad
 * log never stops the indexer (`chain_events_set_aside`, one row per log).
 */
export class EscrowIntegrity1795300006000 implements MigrationInterface {
  name = 'EscrowIntegrity1795300006000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE escrows ADD COLUMN flag text CHECK (flag IN ('terms_mismatch'))`);
    await q.query(`ALTER TABLE escrows ADD COLUMN flag_details jsonb`);
    await q.query(`
      CREATE TABLE chain_events_set_aside (
        tx_hash text NOT NULL,
        log_index integer NOT NULL,
        escrow_key text NOT NULL,
        action text NOT NULL,
        block_number bigint NOT NULL,
        block_hash text NOT NULL,
        reason text NOT NULL,
        data jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (tx_hash, log_index)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS chain_events_set_aside`);
    await q.query(`ALTER TABLE escrows DROP COLUMN IF EXISTS flag_details`);
    await q.query(`ALTER TABLE escrows DROP COLUMN IF EXISTS flag`);
  }
}
