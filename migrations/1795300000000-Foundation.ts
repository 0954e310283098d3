import { MigrationInterface, QueryRunner } from 'typeorm';

/** Organisations, credentials, checkout sessions, idempotency records and the event outbox (issue 2). */
export class Foundation1795300000000 implements MigrationInterface {
  name = 'Foundation1795300000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE organizations (
        id uuid PRIMARY KEY,
        name text NOT NULL,
        handle text NOT NULL UNIQUE,
        payout_address text,
        verification_status text NOT NULL DEFAULT 'unverified',
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE agents (
        id uuid PRIMARY KEY,
        organization_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
        slug text NOT NULL,
        owner_address text NOT NULL,
        paused boolean NOT NULL DEFAULT false,
        signer_enabled boolean NOT NULL DEFAULT false,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (organization_id, slug)
      )`);
    await q.query(`
      CREATE TABLE api_keys (
        id uuid PRIMARY KEY,
        organization_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
        agent_id uuid REFERENCES agents(id) ON DELETE CASCADE,
        kind text NOT NULL CHECK (kind IN ('merchant', 'agent')),
        display_prefix text NOT NULL,
        secret_hash bytea NOT NULL UNIQUE,
        scopes text[] NOT NULL,
        revoked_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        CHECK ((kind = 'agent') = (agent_id IS NOT NULL))
      )`);
    await q.query(`
      CREATE TABLE oauth_clients (
        id uuid PRIMARY KEY,
        organization_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
        client_id text NOT NULL UNIQUE,
        secret_hash bytea NOT NULL,
        scopes text[] NOT NULL,
        revoked_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE oauth_tokens (
        id uuid PRIMARY KEY,
        oauth_client_id uuid NOT NULL REFERENCES oauth_clients(id) ON DELETE CASCADE,
        organization_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
        token_hash bytea NOT NULL UNIQUE,
        scopes text[] NOT NULL,
        expires_at timestamptz NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX oauth_tokens_expires_at_idx ON oauth_tokens (expires_at)`);
    await q.query(`
      CREATE TABLE checkout_sessions (
        id uuid PRIMARY KEY,
        organization_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
        amount_units numeric(78,0) NOT NULL CHECK (amount_units > 0),
        description text NOT NULL,
        status text NOT NULL,
        order_id text,
        shop_domain text,
        redirect_url text,
        webhook_url text,
        escrow_template_id text NOT NULL,
        metadata jsonb,
        escrow_id uuid,
        expires_at timestamptz NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(
      `CREATE INDEX checkout_sessions_org_created_idx ON checkout_sessions (organization_id, created_at DESC, id DESC)`,
    );
    await q.query(`CREATE INDEX checkout_sessions_open_expiry_idx ON checkout_sessions (expires_at) WHERE status = 'open'`);
    await q.query(`
      CREATE TABLE idempotency_records (
        id uuid PRIMARY KEY,
        scope_hash text NOT NULL,
        idempotency_key text NOT NULL,
        organization_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
        method text NOT NULL,
        path text NOT NULL,
        fingerprint text NOT NULL,
        response_status integer NOT NULL,
        response_body text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL,
        UNIQUE (scope_hash, idempotency_key)
      )`);
    await q.query(`CREATE INDEX idempotency_records_expires_at_idx ON idempotency_records (expires_at)`);
    await q.query(`
      CREATE TABLE outbox_events (
        id uuid PRIMARY KEY,
        organization_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
        type text NOT NULL,
        data jsonb NOT NULL,
        extra_target_url text,
        created_at timestamptz NOT NULL DEFAULT now(),
        relayed_at timestamptz
      )`);
    await q.query(`CREATE INDEX outbox_events_pending_idx ON outbox_events (created_at) WHERE relayed_at IS NULL`);
    await q.query(`CREATE INDEX outbox_events_org_created_idx ON outbox_events (organization_id, created_at DESC)`);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const t of ['outbox_events', 'idempotency_records', 'checkout_sessions', 'oauth_tokens', 'oauth_clients', 'api_keys', 'agents', 'organizations']) {
      await q.query(`DROP TABLE IF EXISTS ${t}`);
    }
  }
}
