import { Injectable } from '@nestjs/common';
import { keysetPage } from '../../common/http/keyset';
import { queryRows, TransactionHost, TxHost } from '../../database/transaction';
import { CheckoutSession } from './checkout.entity';

const COLUMNS =
  'id, organization_id, amount_units, description, status, order_id, shop_domain, redirect_url, webhook_url, escrow_template_id, metadata, escrow_id, escrow_attempt, expires_at, offering_id, quantity, invoice_id, refunded_units, created_at, updated_at';

/** The columns a new session is inserted with ({@link sessionParams} gives their values). */
const INSERT_COLUMNS =
  'id, organization_id, amount_units, description, status, order_id, shop_domain, redirect_url, webhook_url, escrow_template_id, metadata, escrow_id, expires_at, offering_id, quantity, invoice_id';

interface SessionRow {
  id: string;
  organization_id: string;
  amount_units: string;
  description: string;
  status: CheckoutSession['status'];
  order_id: string | null;
  shop_domain: string | null;
  redirect_url: string | null;
  webhook_url: string | null;
  escrow_template_id: CheckoutSession['escrowTemplateId'];
  metadata: Record<string, unknown> | null;
  escrow_id: string | null;
  escrow_attempt: number;
  expires_at: Date;
  offering_id: string | null;
  quantity: number | null;
  invoice_id: string | null;
  refunded_units?: string;
  created_at: Date;
  updated_at: Date;
}

function fromRow(r: SessionRow): CheckoutSession {
  return Object.assign(new CheckoutSession(), {
    id: r.id,
    organizationId: r.organization_id,
    amountUnits: BigInt(r.amount_units),
    description: r.description,
    status: r.status,
    orderId: r.order_id,
    shopDomain: r.shop_domain,
    redirectUrl: r.redirect_url,
    webhookUrl: r.webhook_url,
    escrowTemplateId: r.escrow_template_id,
    metadata: r.metadata,
    escrowId: r.escrow_id,
    escrowAttempt: r.escrow_attempt,
    expiresAt: r.expires_at,
    offeringId: r.offering_id,
    quantity: r.quantity,
    invoiceId: r.invoice_id,
    refundedUnits: BigInt(r.refunded_units ?? '0'),
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  });
}

/** All I/O of checkout sessions (docs/architecture.md, Conventions 4). */
@Injectable()
export class CheckoutRepository {
  constructor(private readonly txHost: TransactionHost) {}

  private get repo() {
    return (this.txHost as TxHost).tx.getRepository(CheckoutSession);
  }

  /** Inserts and fills `createdAt`/`updatedAt` from the database (raw SQL: the create hot path). */
  async insert(s: CheckoutSession): Promise<CheckoutSession> {
    const rows = await queryRows<{ created_at: Date; updated_at: Date }>(
      this.txHost,
      `INSERT INTO checkout_sessions (${INSERT_COLUMNS})
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) RETURNING created_at, updated_at`,
      sessionParams(s),
    );
    s.createdAt = rows[0].created_at;
    s.updatedAt = rows[0].updated_at;
    return s;
  }

  /**
   * {@link insert} unless the organisation's verification is rejected (docs/architecture.md §12),
   * checked by the INSERT itself: the create hot path's KYB gate costs no statement of its own.
   * @returns the session with `createdAt`/`updatedAt` filled, or null when the organisation is rejected (nothing written).
   */
  async insertUnlessRejected(s: CheckoutSession): Promise<CheckoutSession | null> {
    const rows = await queryRows<{ created_at: Date; updated_at: Date }>(
      this.txHost,
      `INSERT INTO checkout_sessions (${INSERT_COLUMNS})
       SELECT $1::uuid, $2::uuid, $3::numeric, $4::text, $5::text, $6::text, $7::text, $8::text, $9::text, $10::text,
         $11::jsonb, $12::uuid, $13::timestamptz, $14::uuid, $15::integer, $16::uuid
        WHERE NOT EXISTS (SELECT 1 FROM organization_verifications WHERE organization_id = $2::uuid AND identity_status = 'rejected')
       RETURNING created_at, updated_at`,
      sessionParams(s),
    );
    if (rows.length === 0) return null;
    s.createdAt = rows[0].created_at;
    s.updatedAt = rows[0].updated_at;
    return s;
  }

  /** A session of this organisation, or null (another organisation's id is treated as absent). Raw SQL: the read hot path. */
  async findForOrganization(organizationId: string, id: string): Promise<CheckoutSession | null> {
    const rows = await queryRows<SessionRow>(this.txHost, `SELECT ${COLUMNS} FROM checkout_sessions WHERE id = $1 AND organization_id = $2`, [id, organizationId]);
    return rows.length ? fromRow(rows[0]) : null;
  }

  /** The session `id` of `organizationId` locked FOR UPDATE until the caller's transaction ends, or null. Must run in a transaction. */
  async lockForOrganization(organizationId: string, id: string): Promise<CheckoutSession | null> {
    const rows: SessionRow[] = await (this.txHost as TxHost).tx.query(`SELECT ${COLUMNS} FROM checkout_sessions WHERE id = $1 AND organization_id = $2 FOR UPDATE`, [id, organizationId]);
    return rows.length ? fromRow(rows[0]) : null;
  }

  findById(id: string): Promise<CheckoutSession | null> {
    return this.repo.findOneBy({ id });
  }

  async updateEscrowState(id: string, escrowId: string | null, status: CheckoutSession['status']): Promise<void> {
    await this.repo.update({ id }, { escrowId, status, updatedAt: new Date() });
  }

  /** Counts one funding a reorg took off the chain (DESIGN §22). In the caller's transaction. */
  async countFundingReversal(id: string): Promise<void> {
    await this.repo.increment({ id }, 'fundingReversals', 1);
  }

  /**
   * Reopens a checkout whose escrow `escrowId` the buyer cancelled (docs/architecture.md §13): back
   * to `open` under the next escrow attempt, with no escrow, when it is still the checkout's escrow
   * and the checkout has not expired. The caller checks first that no agent payment stands behind it
   * (an agent escrow is a one-shot payment of the agent's signer; CheckoutService.reopenAfterCancel).
   * In the caller's transaction.
   * @returns the reopened session's organisation and invoice, or null when it was not reopened.
   */
  async reopenAfterCancel(id: string, escrowId: string): Promise<{ organizationId: string; invoiceId: string | null } | null> {
    const rows: Array<{ organization_id: string; invoice_id: string | null }> = await (this.txHost as TxHost).tx.query(
      `UPDATE checkout_sessions SET status = 'open', escrow_id = NULL, escrow_attempt = escrow_attempt + 1, updated_at = now()
        WHERE id = $1 AND escrow_id = $2 AND status = 'cancelled' AND expires_at > now()
       RETURNING organization_id, invoice_id`,
      [id, escrowId],
    );
    return rows[0] ? { organizationId: rows[0].organization_id, invoiceId: rows[0].invoice_id } : null;
  }

  /** Sessions of an invoice, newest first, locked until the transaction ends (invoice page, void). */
  async forInvoiceForUpdate(invoiceId: string): Promise<CheckoutSession[]> {
    const rows: SessionRow[] = await (this.txHost as TxHost).tx.query(
      `SELECT ${COLUMNS} FROM checkout_sessions WHERE invoice_id = $1 ORDER BY created_at DESC, id DESC FOR UPDATE`,
      [invoiceId],
    );
    return rows.map(fromRow);
  }

  /** Ends an open session now (status expired, expiresAt now): its page and funding terms stop offering it. */
  async expireNow(id: string): Promise<void> {
    await (this.txHost as TxHost).tx.query(`UPDATE checkout_sessions SET status = 'expired', expires_at = LEAST(expires_at, now()), updated_at = now() WHERE id = $1 AND status = 'open'`, [id]);
  }

  /** Marks open sessions past expiresAt as expired; returns how many. */
  async expireDue(now: Date): Promise<number> {
    const result = await this.repo
      .createQueryBuilder()
      .update(CheckoutSession)
      .set({ status: 'expired', updatedAt: now })
      .where("status = 'open' AND expires_at <= :now", { now })
      .execute();
    return result.affected ?? 0;
  }

  /** Newest first; `limit + 1` rows. */
  list(organizationId: string, limit: number, startingAfter?: string): Promise<CheckoutSession[]> {
    return keysetPage(() => this.repo.createQueryBuilder('c'), 'c', { sql: 'c.organization_id = :org', params: { org: organizationId } }, limit, startingAfter);
  }

  /** Adds `delta` base units (negative after a reorg) to the row's `refunded_units`, in the caller's transaction (refunds, DESIGN §21). */
  async addRefunded(id: string, delta: bigint): Promise<void> {
    await (this.txHost as TxHost).tx.query(`UPDATE checkout_sessions SET refunded_units = refunded_units + $2 WHERE id = $1`, [id, delta.toString()]);
  }

  /** The row's `refunded_units` (base units; 0 when there is no such row). */
  async refundedUnits(id: string): Promise<bigint> {
    const rows = (await (this.txHost as TxHost).tx.query(`SELECT refunded_units::text AS r FROM checkout_sessions WHERE id = $1`, [id])) as Array<{ r: string }>;
    return rows[0] ? BigInt(rows[0].r) : 0n;
  }
}

/** The 16 INSERT parameters of a session, in {@link INSERT_COLUMNS} order ($1 id … $16 invoice_id). */
function sessionParams(s: CheckoutSession): unknown[] {
  return [s.id, s.organizationId, s.amountUnits.toString(), s.description, s.status, s.orderId, s.shopDomain, s.redirectUrl,
    s.webhookUrl, s.escrowTemplateId, s.metadata === null ? null : JSON.stringify(s.metadata), s.escrowId, s.expiresAt,
    s.offeringId ?? null, s.quantity ?? null, s.invoiceId ?? null];
}
