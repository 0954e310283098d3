import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * One live relay per intent (DESIGN §22; issue 29 finding 1): at most one relayer_transactions row that
 * has not failed per (purpose, reference), enforced by a partial unique index, so a resume, a sweep or a
 * concurrent twin finds the live row (RelayerService.relay) instead of relaying the payload again.
 *
 * Existing duplicates (docs/decisions.md, "One live relay per intent: existing duplicates"): per intent
 * one row stays live — the one recorded as mined, else a broadcast one, else the newest — and the
 * others are marked failed with `superseded by <id> (migration)`. A superseded row that was broadcast and
 * is still in the pool may still be mined: its payload is the same intent's, whose second use reverts
 * on chain (an authorization or an escrow action is used once), and a nonce it leaves unused is
 * handled by the sender's gap repair (a stored nonce the node does not know is allocated again).
 */
export class RelayerLiveIntent1795300079000 implements MigrationInterface {
  name = 'RelayerLiveIntent1795300079000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      WITH ranked AS (
        SELECT id, purpose, reference,
               first_value(id) OVER w AS keep,
               row_number() OVER w AS n
          FROM relayer_transactions
         WHERE status <> 'failed' AND reference IS NOT NULL
        WINDOW w AS (PARTITION BY purpose, reference
                     ORDER BY (mined_tx_hash IS NOT NULL) DESC, (status = 'broadcast') DESC, created_at DESC, id DESC)
      )
      UPDATE relayer_transactions r
         SET status = 'failed', error = 'superseded by ' || ranked.keep || ' (migration RelayerLiveIntent: one live relay per intent)', updated_at = now()
        FROM ranked
       WHERE r.id = ranked.id AND ranked.n > 1`);
    await q.query(`CREATE UNIQUE INDEX relayer_transactions_live_intent ON relayer_transactions (purpose, reference) WHERE status <> 'failed' AND reference IS NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS relayer_transactions_live_intent`);
  }
}
