import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Agents that pay under policy (docs/architecture.md §13, §5): the agent's name, sealed session
 * signer and policy; one case-insensitive namespace for organisation handles and agent slugs; single-use
 * owner signature nonces; payments (UNIQUE(agent_id, idempotency_key), the signed EIP-3009 authorization
 * as a recovery point); the relayer's transactions with nonces allocated in Postgres.
 */
export class Agents1795300013000 implements MigrationInterface {
  name = 'Agents1795300013000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      ALTER TABLE agents
        ADD COLUMN name text,
        ADD COLUMN signer_address text,
        ADD COLUMN signer_key_sealed text,
        ADD COLUMN policy jsonb`);
    await q.query(`CREATE UNIQUE INDEX agents_signer_address_key ON agents (lower(signer_address)) WHERE signer_address IS NOT NULL`);
    await q.query(`
      CREATE TABLE payee_handles (
        handle text PRIMARY KEY,
        organization_id uuid REFERENCES organizations(id) ON DELETE CASCADE,
        agent_id uuid REFERENCES agents(id) ON DELETE CASCADE,
        CHECK ((organization_id IS NULL) <> (agent_id IS NULL))
      )`);
    await q.query(`INSERT INTO payee_handles (handle, organization_id) SELECT lower(handle), id FROM organizations ON CONFLICT DO NOTHING`);
    await q.query(`INSERT INTO payee_handles (handle, agent_id) SELECT lower(slug), id FROM agents ON CONFLICT DO NOTHING`);
    await q.query(`
      CREATE FUNCTION payee_handle_claim() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_TABLE_NAME = 'organizations' THEN
          INSERT INTO payee_handles (handle, organization_id) VALUES (lower(NEW.handle), NEW.id);
        ELSE
          INSERT INTO payee_handles (handle, agent_id) VALUES (lower(NEW.slug), NEW.id);
        END IF;
        RETURN NEW;
      END $$`);
    await q.query(`CREATE TRIGGER organizations_payee_handle AFTER INSERT ON organizations FOR EACH ROW EXECUTE FUNCTION payee_handle_claim()`);
    await q.query(`CREATE TRIGGER agents_payee_handle AFTER INSERT ON agents FOR EACH ROW EXECUTE FUNCTION payee_handle_claim()`);
    await q.query(`
      CREATE TABLE agent_owner_nonces (
        agent_id uuid NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
        nonce text NOT NULL,
        purpose text NOT NULL,
        used_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (agent_id, nonce)
      )`);
    await q.query(`
      CREATE TABLE payments (
        id uuid PRIMARY KEY,
        agent_id uuid NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
        organization_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
        idempotency_key text NOT NULL,
        fingerprint text NOT NULL,
        status text NOT NULL CHECK (status IN ('pending', 'submitted', 'succeeded', 'failed')),
        mode text NOT NULL CHECK (mode IN ('instant', 'x402', 'a2a', 'escrow')),
        to_handle text NOT NULL,
        to_address text NOT NULL,
        from_address text NOT NULL,
        amount numeric(78,0) NOT NULL CHECK (amount > 0),
        fee numeric(78,0) NOT NULL DEFAULT 0,
        auth_nonce text,
        auth_valid_before bigint,
        auth_signature text,
        relay_tx_hashes text[] NOT NULL DEFAULT '{}',
        tx_hash text,
        mandate_id uuid,
        task_id text,
        checkout_session_id uuid,
        failure_reason text,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (agent_id, idempotency_key),
        CHECK ((auth_nonce IS NULL) = (auth_signature IS NULL))
      )`);
    await q.query(`CREATE UNIQUE INDEX payments_authorization_key ON payments (lower(from_address), auth_nonce) WHERE auth_nonce IS NOT NULL`);
    await q.query(`CREATE INDEX payments_agent_created_idx ON payments (agent_id, created_at DESC, id DESC)`);
    await q.query(`CREATE INDEX payments_open_idx ON payments (updated_at) WHERE status IN ('pending', 'submitted')`);
    await q.query(`
      CREATE TABLE relayer_nonces (
        address text PRIMARY KEY,
        next_nonce bigint NOT NULL
      )`);
    await q.query(`
      CREATE TABLE relayer_transactions (
        id uuid PRIMARY KEY,
        address text NOT NULL,
        nonce bigint,
        to_address text NOT NULL,
        data text NOT NULL,
        purpose text NOT NULL,
        reference text,
        tx_hash text,
        status text NOT NULL CHECK (status IN ('queued', 'broadcast', 'failed')),
        error text,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX relayer_transactions_reference_idx ON relayer_transactions (reference)`);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const t of ['relayer_transactions', 'relayer_nonces', 'payments', 'agent_owner_nonces']) await q.query(`DROP TABLE IF EXISTS ${t}`);
    await q.query(`DROP TRIGGER IF EXISTS agents_payee_handle ON agents`);
    await q.query(`DROP TRIGGER IF EXISTS organizations_payee_handle ON organizations`);
    await q.query(`DROP FUNCTION IF EXISTS payee_handle_claim()`);
    await q.query(`DROP TABLE IF EXISTS payee_handles`);
    await q.query(`DROP INDEX IF EXISTS agents_signer_address_key`);
    await q.query(`ALTER TABLE agents DROP COLUMN policy, DROP COLUMN signer_key_sealed, DROP COLUMN signer_address, DROP COLUMN name`);
  }
}
