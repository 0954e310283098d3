import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The relayer on a chain that behaves like a public one (DESIGN §18 "Relayer"): a row keeps every
 * hash it signed for its nonce (`tx_hashes`: the first send, fee bumps, a re-sign after a drop), the
 * one that was mined (`mined_tx_hash`, `mined_block`), when it was last (re)sent (`sent_at`, the
 * bump clock), and, when its payload died while dropped, the row of the 0-value self-transfer that
 * filled its nonce (`filled_by`).
 */
export class RelayerReplacements1795300075000 implements MigrationInterface {
  name = 'RelayerReplacements1795300075000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE relayer_transactions
        ADD COLUMN tx_hashes text[] NOT NULL DEFAULT '{}',
        ADD COLUMN mined_tx_hash text,
        ADD COLUMN mined_block bigint,
        ADD COLUMN sent_at timestamptz,
        ADD COLUMN replacements int NOT NULL DEFAULT 0,
        ADD COLUMN filled_by uuid`);
    await q.query(`UPDATE relayer_transactions SET tx_hashes = ARRAY[tx_hash], sent_at = updated_at WHERE tx_hash IS NOT NULL`);
    // Rows from before this migration were waited on by their callers; the tender looks only at newer ones.
    await q.query(`UPDATE relayer_transactions SET mined_tx_hash = tx_hash WHERE status = 'broadcast' AND tx_hash IS NOT NULL`);
    await q.query(`CREATE INDEX relayer_transactions_unmined_idx ON relayer_transactions (address, nonce) WHERE status = 'broadcast' AND mined_tx_hash IS NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX relayer_transactions_unmined_idx`);
    await q.query(`
      ALTER TABLE relayer_transactions
        DROP COLUMN tx_hashes, DROP COLUMN mined_tx_hash, DROP COLUMN mined_block,
        DROP COLUMN sent_at, DROP COLUMN replacements, DROP COLUMN filled_by`);
  }
}
