import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The outbox relay claims unrelayed events `ORDER BY created_at, id LIMIT n` (issue 33, DESIGN §23).
 * The partial index on `created_at` alone left `id` to a sort of every pending event sharing a
 * `created_at` (all the events one transaction wrote, or a backlog written at once): with the
 * index on (created_at, id) a claim reads its batch and no more, whatever the backlog
 * (test/integration/scale-plans.int-spec.ts checks the plan).
 */
export class OutboxPendingOrder1795300083000 implements MigrationInterface {
  name = 'OutboxPendingOrder1795300083000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX outbox_events_pending_order_idx ON outbox_events (created_at, id) WHERE relayed_at IS NULL`);
    await q.query(`DROP INDEX outbox_events_pending_idx`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX outbox_events_pending_idx ON outbox_events (created_at) WHERE relayed_at IS NULL`);
    await q.query(`DROP INDEX outbox_events_pending_order_idx`);
  }
}
