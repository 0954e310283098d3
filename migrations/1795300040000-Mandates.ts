import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * AP2 intent mandates (docs/architecture.md §14): the owner-signed terms of an agent's mandate, the
 * verified credential verbatim and its nonce, UNIQUE per agent (single use). `used_amount` is never
 * stored: it is the sum of the mandate's payments (docs/architecture.md §13).
 */
export class Mandates1795300040000 implements MigrationInterface {
  name = 'Mandates1795300040000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE mandates (
        id uuid PRIMARY KEY,
        agent_id uuid NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
        organization_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
        payees text[] NOT NULL,
        max_amount_per_payment numeric(78,0) NOT NULL CHECK (max_amount_per_payment > 0),
        total_amount numeric(78,0) NOT NULL CHECK (total_amount > 0),
        expires_at timestamptz NOT NULL,
        description text NOT NULL,
        format text NOT NULL CHECK (format IN ('eip712', 'sd-jwt')),
        nonce text NOT NULL,
        credential jsonb NOT NULL,
        revoked_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (agent_id, nonce)
      )`);
    await q.query(`CREATE INDEX mandates_agent_created_idx ON mandates (agent_id, created_at DESC, id DESC)`);
    await q.query(`CREATE INDEX payments_mandate_idx ON payments (mandate_id) WHERE mandate_id IS NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX payments_mandate_idx`);
    await q.query(`DROP TABLE mandates`);
  }
}
