import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The organisation's ledger of USDC movements (DESIGN §21 "Balance transactions"): one row per USDC
 * `Transfer` log the product caused, id = UUIDv5 of (tx_hash, log_index); signed base units, never 0.
 * `cursor` names the indexer whose rewind removes the row (DESIGN §22). The list is keyset-paged on
 * (block_timestamp, block_number, log_index) per organisation, optionally per type: both indexes
 * serve it; (cursor, block_number) serves the rewind.
 */
export class BalanceTransactions1795300084000 implements MigrationInterface {
  name = 'BalanceTransactions1795300084000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE balance_transactions (
        id uuid PRIMARY KEY,
        organization_id uuid NOT NULL,
        type text NOT NULL CHECK (type IN ('escrow_release', 'payment', 'x402', 'refund')),
        amount numeric(78,0) NOT NULL CHECK (amount <> 0),
        fee numeric(78,0) NOT NULL DEFAULT 0,
        currency text NOT NULL DEFAULT 'USDC',
        source_type text NOT NULL,
        source_id uuid NOT NULL,
        tx_hash text NOT NULL,
        log_index int NOT NULL,
        block_number bigint NOT NULL,
        block_timestamp timestamptz NOT NULL,
        cursor text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (tx_hash, log_index)
      )`);
    await q.query(`CREATE INDEX balance_transactions_org_order ON balance_transactions (organization_id, block_timestamp DESC, block_number DESC, log_index DESC)`);
    await q.query(`CREATE INDEX balance_transactions_org_type_order ON balance_transactions (organization_id, type, block_timestamp DESC, block_number DESC, log_index DESC)`);
    await q.query(`CREATE INDEX balance_transactions_cursor_block ON balance_transactions (cursor, block_number)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE balance_transactions`);
  }
}
