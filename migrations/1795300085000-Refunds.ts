import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Refunds (DESIGN §21): money a seller sends back after it was received, from a released checkout,
 * a received agent payment or a received x402 settlement. One row per refund; the bound (active
 * refunds never exceed the amount received) is checked under the source's row lock. The EIP-3009
 * nonce is derived from the refund id, so (from_address, auth_nonce) is unique; one refund per
 * transfer log (tx_hash, log_index). Each source carries `refunded_units` (succeeded refunds).
 */
export class Refunds1795300085000 implements MigrationInterface {
  name = 'Refunds1795300085000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE refunds (
        id uuid PRIMARY KEY,
        organization_id uuid NOT NULL REFERENCES organizations(id),
        source_type text NOT NULL CHECK (source_type IN ('checkout_session', 'payment', 'x402_settlement')),
        source_id uuid NOT NULL,
        status text NOT NULL CHECK (status IN ('requires_signature', 'pending', 'succeeded', 'failed', 'cancelled')),
        amount_units numeric(78,0) NOT NULL CHECK (amount_units > 0),
        reason text,
        metadata jsonb,
        from_address text NOT NULL,
        to_address text NOT NULL,
        auth_nonce text NOT NULL,
        valid_before bigint NOT NULL,
        created_block bigint NOT NULL,
        method text CHECK (method IN ('signature', 'tx_hash')),
        signature text,
        tx_hash text,
        log_index integer,
        block_number bigint,
        block_hash text,
        submitted_at timestamptz,
        failure_reason text,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE UNIQUE INDEX refunds_authorization ON refunds (from_address, auth_nonce)`);
    await q.query(`CREATE UNIQUE INDEX refunds_transfer_log ON refunds (tx_hash, log_index) WHERE log_index IS NOT NULL AND status <> 'failed'`);
    await q.query(`CREATE INDEX refunds_source ON refunds (source_type, source_id)`);
    await q.query(`CREATE INDEX refunds_org_created ON refunds (organization_id, created_at DESC, id DESC)`);
    await q.query(`CREATE INDEX refunds_open ON refunds (updated_at) WHERE status IN ('requires_signature', 'pending')`);
    for (const table of ['checkout_sessions', 'payments', 'x402_settlements']) {
      await q.query(`ALTER TABLE ${table} ADD COLUMN refunded_units numeric(78,0) NOT NULL DEFAULT 0`);
    }
  }

  async down(q: QueryRunner): Promise<void> {
    for (const table of ['checkout_sessions', 'payments', 'x402_settlements']) {
      await q.query(`ALTER TABLE ${table} DROP COLUMN refunded_units`);
    }
    await q.query(`DROP TABLE refunds`);
  }
}
