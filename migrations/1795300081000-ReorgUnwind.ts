import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The block that used a payment's (or an x402 settlement's) EIP-3009 authorization, as recorded
 * (DESIGN §22 "Reorgs unwind"; issue 29 finding 4): when the USDC authorization cursor rewinds after a
 * reorg, the uses recorded in the rewound blocks are re-derived from the new chain, and a use no block
 * holds any more goes back to `submitted` (x402: `pending`). The spend check also counts a succeeded
 * payment whose use lies above the indexer's cursor as reserved until the chain's logs confirm it.
 * Null for rows settled before this migration (never re-derived). `checkout_sessions.funding_reversals`
 * counts the fundings a reorg took off the chain: each is told to the merchant as
 * `checkout.funding_reversed`, and a funding applied after one gets a new event id (docs/decisions.md).
 */
export class ReorgUnwind1795300081000 implements MigrationInterface {
  name = 'ReorgUnwind1795300081000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE payments ADD COLUMN used_block bigint`);
    await q.query(`ALTER TABLE x402_settlements ADD COLUMN settled_block bigint`);
    await q.query(`ALTER TABLE checkout_sessions ADD COLUMN funding_reversals integer NOT NULL DEFAULT 0`);
    await q.query(`CREATE INDEX payments_used_block ON payments (used_block) WHERE used_block IS NOT NULL`);
    await q.query(`CREATE INDEX x402_settlements_settled_block ON x402_settlements (settled_block) WHERE settled_block IS NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX x402_settlements_settled_block`);
    await q.query(`DROP INDEX payments_used_block`);
    await q.query(`ALTER TABLE x402_settlements DROP COLUMN settled_block`);
    await q.query(`ALTER TABLE payments DROP COLUMN used_block`);
    await q.query(`ALTER TABLE checkout_sessions DROP COLUMN funding_reversals`);
  }
}
