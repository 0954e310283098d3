import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Deliveries know their target kind (`endpoint`: the organisation's endpoint, read as it is at
 * each attempt; `checkout`: a checkout's own fixed `webhookUrl`), one delivery per event and
 * target instead of per URL (the `url` column now records the URL last attempted, which changes
 * when the endpoint is replaced), and a `held` status for endpoint deliveries waiting while the
 * endpoint is disabled (docs/architecture.md §8; issue "Make the money path trustworthy", item 9).
 * Endpoints also record `failing_since` (first failed attempt since the last success) and may be
 * disabled as `failing` after five days of it; `outbox_events (created_at)` serves the 30-day
 * retention pass.
 */
export class WebhookDeliveryTargets1795300007000 implements MigrationInterface {
  name = 'WebhookDeliveryTargets1795300007000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE webhook_deliveries ADD COLUMN target text`);
    // Existing rows: a row whose URL is the event's own target and not the endpoint's is the
    // checkout's; everything else went to the endpoint (the relay sent coinciding URLs once).
    await q.query(`
      UPDATE webhook_deliveries d
         SET target = CASE
               WHEN e.extra_target_url = d.url
                AND NOT EXISTS (SELECT 1 FROM webhook_endpoints w WHERE w.organization_id = d.organization_id AND w.url = d.url)
               THEN 'checkout' ELSE 'endpoint' END
        FROM outbox_events e
       WHERE e.id = d.event_id`);
    await q.query(`
      ALTER TABLE webhook_deliveries
        ALTER COLUMN target SET NOT NULL,
        ADD CONSTRAINT webhook_deliveries_target_check CHECK (target IN ('endpoint', 'checkout')),
        DROP CONSTRAINT webhook_deliveries_event_id_url_key,
        ADD CONSTRAINT webhook_deliveries_event_id_target_key UNIQUE (event_id, target),
        DROP CONSTRAINT webhook_deliveries_status_check,
        ADD CONSTRAINT webhook_deliveries_status_check CHECK (status IN ('pending', 'succeeded', 'retrying', 'failed', 'held'))`);
    await q.query(`CREATE INDEX webhook_deliveries_held_idx ON webhook_deliveries (organization_id) WHERE status = 'held'`);
    // Auto-disable after five days of failures, and the 30-day retention pass over events.
    await q.query(`
      ALTER TABLE webhook_endpoints
        ADD COLUMN failing_since timestamptz,
        DROP CONSTRAINT webhook_endpoints_disabled_reason_check,
        ADD CONSTRAINT webhook_endpoints_disabled_reason_check CHECK (disabled_reason IN ('disabled_by_merchant', 'gone', 'failing'))`);
    await q.query(`CREATE INDEX outbox_events_created_idx ON outbox_events (created_at)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS outbox_events_created_idx`);
    await q.query(`UPDATE webhook_endpoints SET disabled_reason = 'disabled_by_merchant' WHERE disabled_reason = 'failing'`);
    await q.query(`
      ALTER TABLE webhook_endpoints
        DROP COLUMN failing_since,
        DROP CONSTRAINT webhook_endpoints_disabled_reason_check,
        ADD CONSTRAINT webhook_endpoints_disabled_reason_check CHECK (disabled_reason IN ('disabled_by_merchant', 'gone'))`);
    await q.query(`DROP INDEX IF EXISTS webhook_deliveries_held_idx`);
    await q.query(`UPDATE webhook_deliveries SET status = 'failed', last_error = 'held while the endpoint was disabled' WHERE status = 'held'`);
    // Two rows of one event may now share a URL (a replaced endpoint URL equal to the checkout's): keep the endpoint's.
    await q.query(`
      DELETE FROM webhook_deliveries c USING webhook_deliveries e
       WHERE c.event_id = e.event_id AND c.url = e.url AND c.target = 'checkout' AND e.target = 'endpoint'`);
    await q.query(`
      ALTER TABLE webhook_deliveries
        DROP CONSTRAINT webhook_deliveries_status_check,
        ADD CONSTRAINT webhook_deliveries_status_check CHECK (status IN ('pending', 'succeeded', 'retrying', 'failed')),
        DROP CONSTRAINT webhook_deliveries_event_id_target_key,
        ADD CONSTRAINT webhook_deliveries_event_id_url_key UNIQUE (event_id, url),
        DROP CONSTRAINT webhook_deliveries_target_check,
        DROP COLUMN target`);
  }
}
