import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The hash of the block a chain cursor stopped at (DESIGN §18 "Confirmations": a reorg deeper than
 * CONFIRMATIONS is refolded, not lost): the USDC authorization indexer compares it with the chain's
 * block at that height before each pass and reads again from the node's finalized block when they
 * differ. Null for cursors written before this migration and for the escrow cursor (which keeps its
 * hashes in `chain_blocks`).
 */
export class ChainCursorHash1795300077500 implements MigrationInterface {
  name = 'ChainCursorHash1795300077500';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE chain_cursors ADD COLUMN block_hash text`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE chain_cursors DROP COLUMN block_hash`);
  }
}
