import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A buyer's cancel reopens a checkout under a new escrow id while it has not expired
 * (docs/architecture.md §13 and §16): `escrow_attempt` numbers the checkout's escrow ids (the
 * attempt is the on-chain id's upper bytes, libs/chain escrow-key), and a checkout may now have
 * several escrows over time (the cancelled ones and at most one live), so the one-escrow-per-checkout
 * constraint becomes a plain index.
 */
export class CheckoutEscrowAttempts1795300060000 implements MigrationInterface {
  name = 'CheckoutEscrowAttempts1795300060000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE checkout_sessions ADD COLUMN escrow_attempt integer NOT NULL DEFAULT 0 CHECK (escrow_attempt >= 0)`);
    await q.query(`ALTER TABLE escrows DROP CONSTRAINT escrows_checkout_session_id_key`);
    await q.query(`CREATE INDEX escrows_checkout_session_idx ON escrows (checkout_session_id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS escrows_checkout_session_idx`);
    await q.query(`ALTER TABLE escrows ADD CONSTRAINT escrows_checkout_session_id_key UNIQUE (checkout_session_id)`);
    await q.query(`ALTER TABLE checkout_sessions DROP COLUMN IF EXISTS escrow_attempt`);
  }
}
