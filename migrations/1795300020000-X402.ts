import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Paid retries of the service's own x402 challenges (docs/architecture.md §14): one row per EIP-3009
 * authorization, UNIQUE(payer, nonce), so one payment buys one response; settled through the relayer queue.
 */
export class X4021795300020000 implements MigrationInterface {
  name = 'X4021795300020000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE x402_settlements (
        id uuid PRIMARY KEY,
        payer text NOT NULL,
        nonce text NOT NULL,
        pay_to text NOT NULL,
        payee_handle text NOT NULL,
        amount numeric(78, 0) NOT NULL,
        resource text NOT NULL,
        status text NOT NULL CHECK (status IN ('reserved', 'settled', 'failed')),
        tx_hash text,
        error text,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT x402_settlements_payer_nonce_key UNIQUE (payer, nonce)
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE x402_settlements`);
  }
}
