import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Escrows mirrored from the chain (issue 4). An escrow's state is the fold of its applied chain
 * events (`escrow_chain_events`, one row per log, unique on tx hash + log index); the indexer's
 * cursor and the hashes of recently processed blocks (reorg detection) live beside them.
 */
export class Escrow1795300005000 implements MigrationInterface {
  name = 'Escrow1795300005000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE escrows (
        id uuid PRIMARY KEY,
        escrow_key text NOT NULL UNIQUE,
        checkout_session_id uuid UNIQUE REFERENCES checkout_sessions(id) ON DELETE SET NULL,
        status text NOT NULL,
        buyer_address text NOT NULL,
        seller_address text NOT NULL,
        buyer_organization_id uuid REFERENCES organizations(id) ON DELETE SET NULL,
        seller_organization_id uuid REFERENCES organizations(id) ON DELETE SET NULL,
        amount_units numeric(78,0) NOT NULL CHECK (amount_units > 0),
        escrow_template_id text NOT NULL,
        inspection_window_seconds integer NOT NULL,
        delivered_at timestamptz,
        auto_release_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX escrows_seller_org_idx ON escrows (seller_organization_id, created_at DESC, id DESC)`);
    await q.query(`CREATE INDEX escrows_buyer_org_idx ON escrows (buyer_organization_id, created_at DESC, id DESC)`);
    await q.query(`CREATE INDEX escrows_auto_release_idx ON escrows (auto_release_at) WHERE status = 'delivered'`);
    await q.query(`
      CREATE TABLE escrow_chain_events (
        id uuid PRIMARY KEY,
        escrow_id uuid NOT NULL REFERENCES escrows(id) ON DELETE CASCADE,
        action text NOT NULL,
        tx_hash text NOT NULL,
        log_index integer NOT NULL,
        block_number bigint NOT NULL,
        block_hash text NOT NULL,
        from_address text,
        data jsonb NOT NULL DEFAULT '{}',
        created_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (tx_hash, log_index)
      )`);
    await q.query(`CREATE INDEX escrow_chain_events_escrow_idx ON escrow_chain_events (escrow_id, block_number, log_index)`);
    await q.query(`CREATE INDEX escrow_chain_events_block_idx ON escrow_chain_events (block_number)`);
    await q.query(`
      CREATE TABLE chain_cursors (
        name text PRIMARY KEY,
        block_number bigint NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE chain_blocks (
        block_number bigint PRIMARY KEY,
        block_hash text NOT NULL
      )`);
    await q.query(`ALTER TABLE checkout_sessions ADD CONSTRAINT checkout_sessions_escrow_fk FOREIGN KEY (escrow_id) REFERENCES escrows(id) ON DELETE SET NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE checkout_sessions DROP CONSTRAINT IF EXISTS checkout_sessions_escrow_fk`);
    for (const t of ['chain_blocks', 'chain_cursors', 'escrow_chain_events', 'escrows']) await q.query(`DROP TABLE IF EXISTS ${t}`);
  }
}
