import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * W3C trace context across the boundaries we own (DESIGN §20): the `traceparent` of the transaction
 * that wrote an outbox event (continued by the relay and its deliveries) and of the request that
 * queued a relayer transaction (its trace id beside the hash; the indexer continues it when the
 * transaction's events are applied). Nullable: rows written with tracing off have none.
 */
export class TraceContext1795300072000 implements MigrationInterface {
  name = 'TraceContext1795300072000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE outbox_events ADD COLUMN traceparent text`);
    await q.query(`ALTER TABLE relayer_transactions ADD COLUMN traceparent text`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE relayer_transactions DROP COLUMN IF EXISTS traceparent`);
    await q.query(`ALTER TABLE outbox_events DROP COLUMN IF EXISTS traceparent`);
  }
}
