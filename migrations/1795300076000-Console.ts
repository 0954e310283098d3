import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The console for people (docs/architecture.md §19): SIWE nonces (single use, 5 min), server-side
 * console sessions (12 h, revocable; only the SHA-256 of the session token is stored), and `organization_owners`, backfilled from each organisation's payout address
 * (the first owner of an organisation is its payout address at creation).
 */
export class Console1795300076000 implements MigrationInterface {
  name = 'Console1795300076000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE console_nonces (
      nonce text PRIMARY KEY,
      created_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL,
      used_at timestamptz
    )`);
    await q.query(`CREATE INDEX console_nonces_expires_idx ON console_nonces (expires_at)`);
    await q.query(`CREATE TABLE console_sessions (
      id uuid PRIMARY KEY,
      token_hash bytea NOT NULL UNIQUE,
      address text NOT NULL CHECK (address ~ '^0x[0-9a-fA-F]{40}$'),
      chain_id integer NOT NULL,
      client_address text,
      created_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL,
      revoked_at timestamptz
    )`);
    await q.query(`CREATE INDEX console_sessions_address_idx ON console_sessions (lower(address))`);
    await q.query(`CREATE TABLE organization_owners (
      organization_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
      address text NOT NULL CHECK (address ~ '^0x[0-9a-fA-F]{40}$'),
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (organization_id, address)
    )`);
    await q.query(`CREATE INDEX organization_owners_address_idx ON organization_owners (lower(address))`);
    await q.query(`INSERT INTO organization_owners (organization_id, address, created_at)
      SELECT id, payout_address, created_at FROM organizations WHERE payout_address IS NOT NULL
      ON CONFLICT DO NOTHING`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS organization_owners`);
    await q.query(`DROP TABLE IF EXISTS console_sessions`);
    await q.query(`DROP TABLE IF EXISTS console_nonces`);
  }
}
