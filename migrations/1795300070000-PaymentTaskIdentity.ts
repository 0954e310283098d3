import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * An A2A payment made by the JSON-RPC pay skill is identified by its task alone (DESIGN §14: the
 * task id is UNIQUE(agent_id, task_id) on the payment): it has no Idempotency-Key, so the column
 * becomes nullable, and every payment keeps at least one of the two identities. UNIQUE(agent_id,
 * idempotency_key) is unchanged (NULLs do not collide).
 */
export class PaymentTaskIdentity1795300070000 implements MigrationInterface {
  name = 'PaymentTaskIdentity1795300070000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE payments ALTER COLUMN idempotency_key DROP NOT NULL`);
    await q.query(`ALTER TABLE payments ADD CONSTRAINT payments_identity_check CHECK (idempotency_key IS NOT NULL OR task_id IS NOT NULL)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE payments DROP CONSTRAINT IF EXISTS payments_identity_check`);
    await q.query(`UPDATE payments SET idempotency_key = 'a2a-task:' || task_id WHERE idempotency_key IS NULL`);
    await q.query(`ALTER TABLE payments ALTER COLUMN idempotency_key SET NOT NULL`);
  }
}
