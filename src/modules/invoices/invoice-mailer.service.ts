import { Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { createTransport, Transporter } from 'nodemailer';
import { AppConfig } from '../../config/app-config';
import { TransactionHost, TxHost } from '../../database/transaction';
import { OrgsService } from '../orgs/orgs.service';
import { renderInvoiceEmail } from './invoice-email.render';
import { toInvoiceDto } from './invoices.mapper';
import { InvoicesRepository } from './invoices.repository';

/** Attempts before an email is `failed`; retries after 30 s, 2 min, 8 min, 32 min. */
export const EMAIL_MAX_ATTEMPTS = 5;
/** A claimed email is retried by another worker only after this lease (a crash mid-send). */
const LEASE_SECONDS = 120;
const SMTP_TIMEOUT_MS = 15_000;

export function emailRetryDelayMs(attempts: number): number {
  return 30_000 * 4 ** (attempts - 1);
}

/**
 * Delivers pending invoice emails through SMTP (`SMTP_URL`, from `SMTP_FROM`; nodemailer), in
 * the worker, after the send that wrote them committed (docs/architecture.md §11: email is a
 * network call and never runs inside a transaction). Claim (short transaction) → send (no
 * transaction, no pooled connection) → record the outcome (short transaction). At-least-once:
 * a crash between the send and its record sends the email again after the lease.
 */
@Injectable()
export class InvoiceMailer implements OnApplicationShutdown {
  private readonly logger = new Logger('InvoiceMailer');
  private transport: Transporter | null = null;

  constructor(
    private readonly repo: InvoicesRepository,
    private readonly orgs: OrgsService,
    private readonly config: AppConfig,
    private readonly txHost: TransactionHost,
  ) {}

  private get tx() {
    return this.txHost as TxHost;
  }

  private smtp(): Transporter {
    const url = this.config.env.SMTP_URL;
    if (!url) throw new Error('SMTP_URL is not configured in this process');
    if (!this.transport) {
      // nodemailer reads transport options from the URL's query; explicit short timeouts unless the operator set them.
      const u = new URL(url);
      for (const opt of ['connectionTimeout', 'greetingTimeout', 'socketTimeout']) if (!u.searchParams.has(opt)) u.searchParams.set(opt, String(SMTP_TIMEOUT_MS));
      this.transport = createTransport(u.toString());
    }
    return this.transport;
  }

  /**
   * Claims up to `limit` due emails and delivers each.
   * @returns how many were sent, failed for good, or rescheduled.
   */
  async deliverDue(limit = 10): Promise<{ sent: number; failed: number; retrying: number }> {
    const claimed = await this.tx.withTransaction(() => this.repo.claimDueEmails(limit, LEASE_SECONDS));
    const result = { sent: 0, failed: 0, retrying: 0 };
    for (const email of claimed) {
      const invoice = await this.repo.findById(email.invoiceId);
      if (!invoice) continue;
      const merchant = (await this.orgs.getOrganization(invoice.organizationId))?.name ?? 'Your supplier';
      const content = renderInvoiceEmail(toInvoiceDto(invoice, null, this.config.env.CHECKOUT_BASE_URL), merchant);
      try {
        const info = (await this.smtp().sendMail({ from: this.config.env.SMTP_FROM, to: email.toEmail, ...content })) as { messageId?: string };
        await this.tx.withTransaction(() => this.repo.recordEmail(email.id, { status: 'sent', messageId: info.messageId ?? null }));
        result.sent++;
      } catch (err) {
        const error = (err as Error).message.slice(0, 500);
        if (email.attempts >= EMAIL_MAX_ATTEMPTS) {
          await this.tx.withTransaction(() => this.repo.recordEmail(email.id, { status: 'failed', error }));
          result.failed++;
        } else {
          const nextAttemptAt = new Date(Date.now() + emailRetryDelayMs(email.attempts));
          await this.tx.withTransaction(() => this.repo.recordEmail(email.id, { status: 'pending', error, nextAttemptAt }));
          result.retrying++;
        }
        this.logger.warn({ emailId: email.id, invoiceId: email.invoiceId, attempts: email.attempts, err: error }, 'invoice email not delivered');
      }
    }
    return result;
  }

  onApplicationShutdown(): void {
    this.transport?.close();
  }
}
