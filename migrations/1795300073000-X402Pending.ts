import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * x402 settlements on a chain that does not mine at once (docs/architecture.md §18): a settlement
 * whose relay is queued or unmined stays `pending` (the legacy `reserved` is read as pending), keeps
 * the whole signed authorization so the worker's sweep or a retry of the same header can resume it
 * after a crash, holds a short lease while one request or sweep advances it, and records when its
 * one 200 answer was given (`answered_at`: a replay after that is refused).
 */
export class X402Pending1795300073000 implements MigrationInterface {
  name = 'X402Pending1795300073000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE x402_settlements DROP CONSTRAINT IF EXISTS x402_settlements_status_check`);
    await q.query(`ALTER TABLE x402_settlements ADD CONSTRAINT x402_settlements_status_check CHECK (status IN ('reserved', 'pending', 'settled', 'failed'))`);
    await q.query(`
      ALTER TABLE x402_settlements
        ADD COLUMN valid_after numeric(78, 0),
        ADD COLUMN valid_before numeric(78, 0),
        ADD COLUMN signature text,
        ADD COLUMN lease_until timestamptz,
        ADD COLUMN answered_at timestamptz`);
    // Rows settled before this migration were answered 200 when they settled.
    await q.query(`UPDATE x402_settlements SET answered_at = updated_at WHERE status = 'settled'`);
    await q.query(`CREATE INDEX x402_settlements_open_idx ON x402_settlements (updated_at) WHERE status IN ('reserved', 'pending')`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS x402_settlements_open_idx`);
    await q.query(`UPDATE x402_settlements SET status = 'reserved' WHERE status = 'pending'`);
    await q.query(`ALTER TABLE x402_settlements DROP COLUMN valid_after, DROP COLUMN valid_before, DROP COLUMN signature, DROP COLUMN lease_until, DROP COLUMN answered_at`);
    await q.query(`ALTER TABLE x402_settlements DROP CONSTRAINT IF EXISTS x402_settlements_status_check`);
    await q.query(`ALTER TABLE x402_settlements ADD CONSTRAINT x402_settlements_status_check CHECK (status IN ('reserved', 'settled', 'failed'))`);
  }
}
