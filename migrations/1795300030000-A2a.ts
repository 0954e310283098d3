import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A2A (docs/architecture.md §14): one payment per agent and A2A task (UNIQUE(agent_id, task_id),
 * partial: most payments have no task), and the Postgres task store behind the A2A JSON-RPC
 * endpoint and payment-submitted. A task belongs to one owner (organisation + credential actor) and
 * is keyed by (owner, id), so two callers may use the same task id; `task` is the A2A v1.0 JSON
 * of the task (`Task.toJSON` of @a2a-js/sdk), `state` its status copied out for listing.
 */
export class A2a1795300030000 implements MigrationInterface {
  name = 'A2a1795300030000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE UNIQUE INDEX payments_agent_task_key ON payments (agent_id, task_id) WHERE task_id IS NOT NULL`);
    await q.query(`
      CREATE TABLE a2a_tasks (
        owner text NOT NULL,
        id text NOT NULL,
        organization_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
        agent_id uuid REFERENCES agents(id) ON DELETE CASCADE,
        context_id text NOT NULL,
        state text NOT NULL,
        task jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (owner, id)
      )`);
    await q.query(`CREATE INDEX a2a_tasks_owner_updated_idx ON a2a_tasks (owner, updated_at DESC, id DESC)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS a2a_tasks`);
    await q.query(`DROP INDEX IF EXISTS payments_agent_task_key`);
  }
}
