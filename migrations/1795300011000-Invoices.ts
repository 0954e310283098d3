import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Invoices (docs/architecture.md §11): drafts, then `open` with a per-organisation number
 * (`invoice_number_counters`, incremented in the finalising transaction, so a rollback leaves no
 * gap), `paid` when its checkout is released, `void`. Emails to the customer are rows delivered by
 * the worker after the send commits (`invoice_emails`). A checkout session may pay an invoice;
 * at most one non-terminal session per invoice (partial unique index).
 */
export class Invoices1795300011000 implements MigrationInterface {
  name = 'Invoices1795300011000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE invoices (
        id uuid PRIMARY KEY,
        organization_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
        number text,
        status text NOT NULL CHECK (status IN ('draft', 'open', 'paid', 'void')),
        customer_name text NOT NULL,
        customer_email text NOT NULL,
        line_items jsonb NOT NULL,
        amount_units numeric(78,0) NOT NULL CHECK (amount_units > 0),
        currency text NOT NULL DEFAULT 'USDC',
        due_at timestamptz,
        memo text,
        metadata jsonb,
        checkout_session_id uuid REFERENCES checkout_sessions(id) ON DELETE SET NULL,
        sent_at timestamptz,
        paid_at timestamptz,
        voided_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        UNIQUE (organization_id, number),
        CHECK (status <> 'draft' OR number IS NULL),
        CHECK (status NOT IN ('open', 'paid') OR (number IS NOT NULL AND sent_at IS NOT NULL))
      )`);
    await q.query(`CREATE INDEX invoices_org_idx ON invoices (organization_id, created_at DESC, id DESC)`);
    await q.query(`
      CREATE TABLE invoice_number_counters (
        organization_id uuid PRIMARY KEY REFERENCES organizations(id) ON DELETE CASCADE,
        last_number bigint NOT NULL
      )`);
    await q.query(`
      CREATE TABLE invoice_emails (
        id uuid PRIMARY KEY,
        invoice_id uuid NOT NULL REFERENCES invoices(id) ON DELETE CASCADE,
        organization_id uuid NOT NULL REFERENCES organizations(id) ON DELETE CASCADE,
        to_email text NOT NULL,
        status text NOT NULL CHECK (status IN ('pending', 'sent', 'failed', 'skipped')),
        attempts integer NOT NULL DEFAULT 0,
        next_attempt_at timestamptz,
        message_id text,
        last_error text,
        sent_at timestamptz,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    await q.query(`CREATE INDEX invoice_emails_due_idx ON invoice_emails (next_attempt_at) WHERE status = 'pending'`);
    await q.query(`CREATE INDEX invoice_emails_invoice_idx ON invoice_emails (invoice_id, created_at DESC)`);
    await q.query(`ALTER TABLE checkout_sessions ADD COLUMN invoice_id uuid REFERENCES invoices(id) ON DELETE RESTRICT`);
    await q.query(`
      CREATE UNIQUE INDEX checkout_sessions_invoice_active_idx ON checkout_sessions (invoice_id)
        WHERE invoice_id IS NOT NULL AND status IN ('open', 'funded', 'accepted', 'delivered', 'disputed')`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS checkout_sessions_invoice_active_idx`);
    await q.query(`ALTER TABLE checkout_sessions DROP COLUMN IF EXISTS invoice_id`);
    for (const t of ['invoice_emails', 'invoice_number_counters', 'invoices']) await q.query(`DROP TABLE IF EXISTS ${t}`);
  }
}
