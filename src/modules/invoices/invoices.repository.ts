import { Injectable } from '@nestjs/common';
import { keysetPage } from '../../common/http/keyset';
import { TransactionHost, TxHost } from '../../database/transaction';
import { Invoice, InvoiceEmail, InvoiceStatus } from './invoices.entity';

/** Rows of an UPDATE … RETURNING: TypeORM's postgres driver answers `[rows, affected]` for UPDATE. */
function returned<T>(result: unknown): T[] {
  return Array.isArray(result) && result.length === 2 && Array.isArray(result[0]) && typeof result[1] === 'number' ? (result[0] as T[]) : (result as T[]);
}

/** All I/O of invoices and their emails (docs/architecture.md, Conventions 4); every call runs in the caller's transaction when there is one. */
@Injectable()
export class InvoicesRepository {
  constructor(private readonly txHost: TransactionHost) {}

  private get tx() {
    return (this.txHost as TxHost).tx;
  }

  private get invoices() {
    return this.tx.getRepository(Invoice);
  }

  private get emails() {
    return this.tx.getRepository(InvoiceEmail);
  }

  async insert(i: Invoice): Promise<Invoice> {
    await this.invoices.insert(i as never);
    return (await this.invoices.findOneBy({ id: i.id }))!;
  }

  /** The invoice of this organisation, or null; `forUpdate` locks the row until the transaction ends. */
  findForOrganization(organizationId: string, id: string, forUpdate = false): Promise<Invoice | null> {
    const qb = this.invoices.createQueryBuilder('i').where('i.id = :id AND i.organization_id = :org', { id, org: organizationId });
    if (forUpdate) qb.setLock('pessimistic_write');
    return qb.getOne();
  }

  /** By id, any organisation (the public invoice page: the id is the capability). */
  findById(id: string, forUpdate = false): Promise<Invoice | null> {
    const qb = this.invoices.createQueryBuilder('i').where('i.id = :id', { id });
    if (forUpdate) qb.setLock('pessimistic_write');
    return qb.getOne();
  }

  async save(i: Invoice): Promise<Invoice> {
    const { id, organizationId: _o, createdAt: _c, ...fields } = i;
    await this.invoices.update({ id }, { ...(fields as object), updatedAt: new Date() } as never);
    return (await this.invoices.findOneBy({ id }))!;
  }

  /**
   * The organisation's next invoice number, 1, 2, 3… Increments a per-organisation counter row in
   * the caller's transaction: concurrent finalisations queue on that row, and a rollback gives the
   * number back, so numbers have neither gaps nor duplicates (UNIQUE (organization_id, number) backs it).
   */
  async nextNumber(organizationId: string): Promise<number> {
    const rows: Array<{ last_number: string }> = await this.tx.query(
      `INSERT INTO invoice_number_counters (organization_id, last_number) VALUES ($1, 1)
       ON CONFLICT (organization_id) DO UPDATE SET last_number = invoice_number_counters.last_number + 1
       RETURNING last_number`,
      [organizationId],
    );
    return Number(rows[0].last_number);
  }

  /** Sets paid/open after a checkout change, only if the invoice is still in `from`; returns whether it moved. */
  async moveStatus(id: string, from: InvoiceStatus, to: InvoiceStatus, checkoutSessionId: string): Promise<boolean> {
    const rows = returned<{ id: string }>(await this.tx.query(
      `UPDATE invoices SET status = $3, checkout_session_id = $4,
         paid_at = CASE WHEN $3 = 'paid' THEN now() ELSE NULL END, updated_at = now()
       WHERE id = $1 AND status = $2 RETURNING id`,
      [id, from, to, checkoutSessionId],
    ));
    return rows.length > 0;
  }

  /** Points an open invoice at the checkout now paying it (shown while funded…disputed). */
  async setCurrentCheckout(id: string, checkoutSessionId: string): Promise<void> {
    await this.tx.query(`UPDATE invoices SET checkout_session_id = $2, updated_at = now() WHERE id = $1 AND status = 'open'`, [id, checkoutSessionId]);
  }

  /** Newest first; `limit + 1` rows; `status` filters when given. */
  list(organizationId: string, limit: number, startingAfter?: string, status?: InvoiceStatus): Promise<Invoice[]> {
    return keysetPage(
      () => this.invoices.createQueryBuilder('i'),
      'i',
      { sql: 'i.organization_id = :org', params: { org: organizationId } },
      limit,
      startingAfter,
      (qb) => {
        if (status) qb.andWhere('i.status = :status', { status });
      },
    );
  }

  async insertEmail(e: InvoiceEmail): Promise<void> {
    await this.emails.insert(e as never);
  }

  /** The latest email of each invoice in `ids`. */
  async latestEmails(ids: string[]): Promise<Map<string, InvoiceEmail>> {
    if (ids.length === 0) return new Map();
    const rows = await this.emails
      .createQueryBuilder('e')
      .distinctOn(['e.invoice_id'])
      .where('e.invoice_id IN (:...ids)', { ids })
      .orderBy('e.invoice_id')
      .addOrderBy('e.created_at', 'DESC')
      .addOrderBy('e.id', 'DESC')
      .getMany();
    return new Map(rows.map((r) => [r.invoiceId, r]));
  }

  /**
   * Claims up to `limit` pending emails that are due, with a lease: attempts + 1 and the next
   * attempt pushed `leaseSeconds` ahead, so another worker (or this one after a crash) retries
   * only after the lease. `FOR UPDATE SKIP LOCKED`: concurrent workers never claim the same row.
   */
  async claimDueEmails(limit: number, leaseSeconds: number): Promise<InvoiceEmail[]> {
    const rows = returned<{ id: string }>(await this.tx.query(
      `UPDATE invoice_emails SET attempts = attempts + 1, next_attempt_at = now() + make_interval(secs => $2), updated_at = now()
        WHERE id IN (SELECT id FROM invoice_emails WHERE status = 'pending' AND next_attempt_at <= now()
                      ORDER BY next_attempt_at LIMIT $1 FOR UPDATE SKIP LOCKED)
        RETURNING id`,
      [limit, leaseSeconds],
    ));
    if (rows.length === 0) return [];
    return this.emails.createQueryBuilder('e').where('e.id IN (:...ids)', { ids: rows.map((r) => r.id) }).getMany();
  }

  /** Records an email's outcome: sent, failed for good, or pending again at `nextAttemptAt`. */
  async recordEmail(
    id: string,
    outcome: { status: 'sent'; messageId: string | null } | { status: 'failed'; error: string } | { status: 'pending'; error: string; nextAttemptAt: Date },
  ): Promise<void> {
    if (outcome.status === 'sent') {
      await this.emails.update({ id }, { status: 'sent', messageId: outcome.messageId, sentAt: new Date(), lastError: null, nextAttemptAt: null, updatedAt: new Date() });
    } else if (outcome.status === 'failed') {
      await this.emails.update({ id }, { status: 'failed', lastError: outcome.error, nextAttemptAt: null, updatedAt: new Date() });
    } else {
      await this.emails.update({ id }, { lastError: outcome.error, nextAttemptAt: outcome.nextAttemptAt, updatedAt: new Date() });
    }
  }
}
