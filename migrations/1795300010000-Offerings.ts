import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The merchant's catalogue (docs/architecture.md §11): offerings, archived by `active = false`
 * (never deleted, so a checkout keeps pointing at what it sold), and the checkout session's
 * `offering_id` + `quantity`.
 */
export class Offerings1795300010000 implements MigrationInterface {
  name = 'Offerings1795300010000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE offerings (
        id uuid PRIMARY KEY,
        organization_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
        name text NOT NULL,
        description text,
        amount_units numeric(78,0) NOT NULL CHECK (amount_units > 0),
        escrow_template_id text NOT NULL,
        active boolean NOT NULL DEFAULT true,
        metadata jsonb,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX offerings_org_idx ON offerings (organization_id, created_at DESC, id DESC)`);
    await q.query(`ALTER TABLE checkout_sessions ADD COLUMN offering_id uuid REFERENCES offerings(id) ON DELETE RESTRICT`);
    await q.query(`ALTER TABLE checkout_sessions ADD COLUMN quantity integer CHECK (quantity BETWEEN 1 AND 100)`);
    await q.query(`ALTER TABLE checkout_sessions ADD CONSTRAINT checkout_sessions_quantity_needs_offering CHECK ((offering_id IS NULL) = (quantity IS NULL))`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE checkout_sessions DROP CONSTRAINT IF EXISTS checkout_sessions_quantity_needs_offering`);
    await q.query(`ALTER TABLE checkout_sessions DROP COLUMN IF EXISTS quantity`);
    await q.query(`ALTER TABLE checkout_sessions DROP COLUMN IF EXISTS offering_id`);
    await q.query(`DROP TABLE IF EXISTS offerings`);
  }
}
