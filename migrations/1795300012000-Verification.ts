import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Business verification (docs/architecture.md §12): one record per organisation with its wallet
 * and identity checks (`organization_verifications`, absent = nothing started), and every
 * accepted wallet payment by (tx hash, log index), so one USDC transfer verifies one organisation
 * only (`verification_wallet_payments`). The bare `organizations.verification_status` column
 * moves into the record: a `rejected` organisation keeps its rejection as a rejected identity check.
 */
export class Verification1795300012000 implements MigrationInterface {
  name = 'Verification1795300012000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE organization_verifications (
        organization_id uuid PRIMARY KEY REFERENCES organizations(id) ON DELETE CASCADE,
        identity_status text NOT NULL DEFAULT 'unverified'
          CHECK (identity_status IN ('unverified', 'pending', 'verified', 'rejected')),
        identity_provider text CHECK (identity_provider IN ('sandbox', 'stripe')),
        identity_reference text,
        identity_url text,
        identity_expires_at timestamptz,
        identity_provider_status text,
        identity_last_error text,
        identity_decided_by text CHECK (identity_decided_by IN ('provider', 'operator')),
        wallet_status text NOT NULL DEFAULT 'unverified' CHECK (wallet_status IN ('unverified', 'pending', 'verified')),
        wallet_address text,
        wallet_amount numeric(78,0) CHECK (wallet_amount > 0),
        wallet_pay_to text,
        wallet_created_at timestamptz,
        wallet_expires_at timestamptz,
        wallet_after_block bigint,
        wallet_chain_deadline bigint,
        wallet_tx_hash text,
        wallet_log_index integer,
        wallet_verified_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        CHECK (wallet_status = 'unverified' OR (wallet_address IS NOT NULL AND wallet_amount IS NOT NULL AND wallet_pay_to IS NOT NULL
          AND wallet_expires_at IS NOT NULL AND wallet_after_block IS NOT NULL AND wallet_chain_deadline IS NOT NULL)),
        CHECK (wallet_status <> 'verified' OR (wallet_tx_hash IS NOT NULL AND wallet_log_index IS NOT NULL))
      )`);
    await q.query(`
      CREATE UNIQUE INDEX organization_verifications_identity_reference
        ON organization_verifications (identity_provider, identity_reference) WHERE identity_reference IS NOT NULL`);
    await q.query(`
      CREATE TABLE verification_wallet_payments (
        tx_hash text NOT NULL,
        log_index integer NOT NULL,
        organization_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
        from_address text NOT NULL,
        to_address text NOT NULL,
        amount numeric(78,0) NOT NULL CHECK (amount > 0),
        block_number bigint NOT NULL,
        block_time timestamptz NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (tx_hash, log_index)
      )`);
    await q.query(`CREATE INDEX verification_wallet_payments_org ON verification_wallet_payments (organization_id)`);
    await q.query(`
      INSERT INTO organization_verifications (organization_id, identity_status, identity_decided_by)
      SELECT id, 'rejected', 'operator' FROM organizations WHERE verification_status = 'rejected'`);
    await q.query(`ALTER TABLE organizations DROP COLUMN verification_status`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE organizations ADD COLUMN verification_status text NOT NULL DEFAULT 'unverified'`);
    await q.query(`
      UPDATE organizations o SET verification_status = CASE
          WHEN v.identity_status = 'rejected' THEN 'rejected'
          WHEN v.identity_status = 'verified' AND v.wallet_status = 'verified' THEN 'verified'
          WHEN v.identity_status <> 'unverified' OR v.wallet_status <> 'unverified' THEN 'pending'
          ELSE 'unverified' END
        FROM organization_verifications v WHERE v.organization_id = o.id`);
    await q.query(`DROP TABLE IF EXISTS verification_wallet_payments`);
    await q.query(`DROP TABLE IF EXISTS organization_verifications`);
  }
}
