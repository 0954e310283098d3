import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Webhook endpoints (one per organisation, sealed secrets), deliveries (one per event and URL),
 * and a NOTIFY on outbox inserts that wakes the worker's relay at commit (issue 3, docs/architecture.md §8).
 */
export class Webhooks1795300003000 implements MigrationInterface {
  name = 'Webhooks1795300003000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE webhook_endpoints (
        id uuid PRIMARY KEY,
        organization_id uuid NOT NULL UNIQUE REFERENCES organizations(id) ON DELETE CASCADE,
        url text NOT NULL,
        enabled boolean NOT NULL DEFAULT true,
        events text[],
        disabled_reason text CHECK (disabled_reason IN ('disabled_by_merchant', 'gone')),
        secret_sealed text NOT NULL,
        previous_secret_sealed text,
        previous_secret_expires_at timestamptz,
        secret_rotated_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`
      CREATE TABLE webhook_deliveries (
        id uuid PRIMARY KEY,
        event_id uuid NOT NULL REFERENCES outbox_events(id) ON DELETE CASCADE,
        organization_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
        event_type text NOT NULL,
        url text NOT NULL,
        status text NOT NULL CHECK (status IN ('pending', 'succeeded', 'retrying', 'failed')),
        attempts integer NOT NULL DEFAULT 0,
        max_attempts integer NOT NULL DEFAULT 10,
        response_status integer,
        response_body text CHECK (octet_length(response_body) <= 4096),
        last_error text,
        next_attempt_at timestamptz,
        last_attempt_at timestamptz,
        delivered_at timestamptz,
        lease_token uuid,
        lease_expires_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (event_id, url)
      )`);
    await q.query(`CREATE INDEX webhook_deliveries_org_created_idx ON webhook_deliveries (organization_id, created_at DESC, id DESC)`);
    await q.query(`CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE status IN ('pending', 'retrying')`);
    await q.query(`
      CREATE FUNCTION outbox_events_notify() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('outbox_events', '');
        RETURN NULL;
      END $$`);
    await q.query(`
      CREATE TRIGGER outbox_events_notify AFTER INSERT ON outbox_events
      FOR EACH STATEMENT EXECUTE FUNCTION outbox_events_notify()`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TRIGGER IF EXISTS outbox_events_notify ON outbox_events`);
    await q.query(`DROP FUNCTION IF EXISTS outbox_events_notify()`);
    await q.query(`DROP TABLE IF EXISTS webhook_deliveries`);
    await q.query(`DROP TABLE IF EXISTS webhook_endpoints`);
  }
}
