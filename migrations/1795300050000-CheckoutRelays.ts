import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Gasless funding from the hosted pay page (docs/architecture.md §16): one row per buyer
 * authorization relayed, keyed by (buyer, EIP-3009 nonce), created only after the signature, the
 * terms and a simulated call checked out; the relayer queue's row carries the transaction itself,
 * now with its signed bytes (`raw_tx`) from the moment it is signed.
 */
export class CheckoutRelays1795300050000 implements MigrationInterface {
  name = 'CheckoutRelays1795300050000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE checkout_relays (
        id uuid PRIMARY KEY,
        checkout_session_id uuid NOT NULL REFERENCES checkout_sessions (id),
        buyer text NOT NULL,
        nonce text NOT NULL,
        valid_after numeric(78, 0) NOT NULL,
        valid_before numeric(78, 0) NOT NULL,
        signature text NOT NULL,
        status text NOT NULL CHECK (status IN ('reserved', 'broadcast', 'failed')),
        relay_tx_id uuid,
        tx_hash text,
        error text,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT checkout_relays_buyer_nonce_key UNIQUE (buyer, nonce)
      )`);
    await q.query(`CREATE INDEX checkout_relays_checkout_idx ON checkout_relays (checkout_session_id)`);
    // The relayer's recovery point "signed" keeps the signed bytes, so a send interrupted before its
    // broadcast rebroadcasts the same transaction (same nonce, same hash) instead of signing another.
    await q.query(`ALTER TABLE relayer_transactions ADD COLUMN raw_tx text`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE relayer_transactions DROP COLUMN raw_tx`);
    await q.query(`DROP TABLE checkout_relays`);
  }
}
