import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { AmountFormatError, formatAmount, parseAmount } from '@lib/money';
import { v7 as uuidv7 } from 'uuid';
import type { Principal } from '../../kernel/auth/principal';
import { AppError } from '../../common/errors/app-error';
import { ListPage, toPage } from '../../common/http/list.dto';
import { assertMetadataBounds } from '../../common/validation/metadata';
import { AppConfig } from '../../config/app-config';
import { TransactionHost, TxHost } from '../../database/transaction';
import { CheckoutHooks, CheckoutStatusChange } from '../checkout/checkout-hooks.service';
import { CheckoutService } from '../checkout/checkout.service';
import { EscrowChainService } from '../escrow/escrow-chain.service';
import { VerificationService } from '../verification/verification.service';
import type { CheckoutSessionDto } from '../checkout/dto/checkout-session.dto';
import { mergePatch, OfferingsService } from '../offerings/offerings.service';
import { CreateInvoiceDto, InvoiceDto, InvoiceLineInputDto, UpdateInvoiceDto } from './dto/invoice.dto';
import { Invoice, InvoiceEmail, InvoiceStatus, StoredLineItem } from './invoices.entity';
import { toInvoiceDto } from './invoices.mapper';
import { InvoicesRepository } from './invoices.repository';
import { FUNDED_CHECKOUT_STATUSES, invoiceAfter, invoiceAfterCheckout } from './invoices.state';

/**
 * How long after an open checkout's deadline (its expiresAt, the signed terms' deadline) the
 * invoice page waits before minting a replacement: block timestamps may run behind our clock, and
 * a funding of the old terms must not land beside the new checkout (docs/decisions.md).
 */
export const TERMS_CLOCK_MARGIN_MS = 120_000;

/** What the invoice page shows: the invoice and, while open, the checkout that pays it. */
export interface InvoicePageView {
  invoice: InvoiceDto;
  organizationId: string;
  /** pay: an open checkout to pay; in_escrow: a checkout is funded…disputed; closing: the last checkout's terms are still valid on chain. */
  state: 'pay' | 'in_escrow' | 'closing' | 'paid' | 'void';
  checkout: CheckoutSessionDto | null;
}

const isFunded = (status: string) => (FUNDED_CHECKOUT_STATUSES as readonly string[]).includes(status);

/** Invoices of an organisation (docs/architecture.md §11; docs/api.md invoices endpoints). */
@Injectable()
export class InvoicesService implements OnModuleInit {
  private readonly logger = new Logger('Invoices');

  constructor(
    private readonly repo: InvoicesRepository,
    private readonly offerings: OfferingsService,
    private readonly checkout: CheckoutService,
    private readonly hooks: CheckoutHooks,
    private readonly config: AppConfig,
    private readonly txHost: TransactionHost,
    private readonly verification: VerificationService,
    private readonly escrowChain: EscrowChainService,
  ) {}

  onModuleInit(): void {
    this.hooks.onStatusChange((change) => this.followCheckout(change));
  }

  private get tx() {
    return this.txHost as TxHost;
  }

  private render(i: Invoice, email: InvoiceEmail | null | undefined): InvoiceDto {
    return toInvoiceDto(i, email, this.config.env.CHECKOUT_BASE_URL);
  }

  /**
   * Creates a draft: lines priced (offering lines at the offering's current price), total in base units.
   * @throws AppError invalid_request for a bad line (named `lineItems.N.field`), a total over
   *   MAX_AMOUNT (param lineItems) or oversized metadata.
   */
  async create(principal: Principal, input: CreateInvoiceDto): Promise<InvoiceDto> {
    const lineItems = await this.priceLines(principal.organizationId, input.lineItems);
    const metadata = input.metadata ?? null;
    assertMetadataBounds('metadata', metadata);
    const invoice = Object.assign(new Invoice(), {
      id: uuidv7(),
      organizationId: principal.organizationId,
      number: null,
      status: 'draft' as const,
      customerName: input.customer.name,
      customerEmail: input.customer.email,
      lineItems,
      amountUnits: this.total(lineItems),
      currency: 'USDC',
      dueAt: input.dueAt ? new Date(input.dueAt) : null,
      memo: input.memo ?? null,
      metadata,
      checkoutSessionId: null,
      sentAt: null,
      paidAt: null,
      voidedAt: null,
    });
    const saved = await this.tx.withTransaction(() => this.repo.insert(invoice));
    return this.render(saved, null);
  }

  /** @throws AppError not_found when absent or another organisation's. */
  async get(principal: Principal, id: string): Promise<InvoiceDto> {
    const i = await this.repo.findForOrganization(principal.organizationId, id);
    if (!i) throw AppError.notFound('invoice');
    return this.render(i, (await this.repo.latestEmails([i.id])).get(i.id));
  }

  async list(principal: Principal, q: { limit?: number; startingAfter?: string; status?: InvoiceStatus }): Promise<ListPage<InvoiceDto>> {
    const limit = q.limit ?? 10;
    const rows = await this.repo.list(principal.organizationId, limit, q.startingAfter, q.status);
    const emails = await this.repo.latestEmails(rows.slice(0, limit).map((r) => r.id));
    return toPage(rows, limit, (r) => this.render(r, emails.get(r.id)));
  }

  /**
   * Edits a draft with JSON merge semantics: absent keeps, null clears dueAt/memo/metadata,
   * customer merges by field, lineItems replaces every line (re-priced now).
   * @throws AppError not_found; 409 invalid_request once sent or voided; 400 as {@link create}.
   */
  async update(principal: Principal, id: string, patch: UpdateInvoiceDto): Promise<InvoiceDto> {
    const lineItems = patch.lineItems !== undefined ? await this.priceLines(principal.organizationId, patch.lineItems) : undefined;
    return this.tx.withTransaction(async () => {
      const i = await this.repo.findForOrganization(principal.organizationId, id, true);
      if (!i) throw AppError.notFound('invoice');
      invoiceAfter(i.status, 'edit');
      if (patch.customer?.name !== undefined) i.customerName = patch.customer.name;
      if (patch.customer?.email !== undefined) i.customerEmail = patch.customer.email;
      if (lineItems) {
        i.lineItems = lineItems;
        i.amountUnits = this.total(lineItems);
      }
      if (patch.dueAt !== undefined) i.dueAt = patch.dueAt === null ? null : new Date(patch.dueAt);
      if (patch.memo !== undefined) i.memo = patch.memo;
      if (patch.metadata !== undefined) {
        const merged = mergePatch(i.metadata, patch.metadata);
        i.metadata = merged && Object.keys(merged).length > 0 ? merged : null;
        assertMetadataBounds('metadata', i.metadata);
      }
      return this.render(await this.repo.save(i), (await this.repo.latestEmails([i.id])).get(i.id));
    });
  }

  /**
   * The single place where an organisation's standing gates sending invoices: a rejected
   * verification may not send (docs/architecture.md §12).
   * @throws AppError 403 kyb_rejected.
   */
  protected assertOrganizationMaySend(organizationId: string): Promise<void> {
    return this.verification.assertNotRejected(organizationId);
  }

  /**
   * `send` (docs/architecture.md §11): from draft it finalises — lines and amount frozen, the next
   * per-organisation number `INV-000001`, `payUrl`, `sentAt` — from open it re-sends. Either way
   * it records an email to the customer in the same transaction: `pending` for the worker to
   * deliver after commit when SMTP_URL is set, else `skipped` (the response's `email.status`
   * says it was not emailed). No network call happens here.
   * @throws AppError not_found; 409 invalid_request from paid or void.
   */
  async send(principal: Principal, id: string): Promise<InvoiceDto> {
    await this.assertOrganizationMaySend(principal.organizationId);
    return this.tx.withTransaction(async () => {
      let i = await this.repo.findForOrganization(principal.organizationId, id, true);
      if (!i) throw AppError.notFound('invoice');
      const { finalise } = invoiceAfter(i.status, 'send');
      if (finalise) {
        const n = await this.repo.nextNumber(i.organizationId);
        i.number = `INV-${String(n).padStart(6, '0')}`;
        i.status = 'open';
        i.sentAt = new Date();
        i = await this.repo.save(i);
      }
      const smtp = Boolean(this.config.env.SMTP_URL);
      const now = new Date();
      const email = Object.assign(new InvoiceEmail(), {
        id: uuidv7(),
        invoiceId: i.id,
        organizationId: i.organizationId,
        toEmail: i.customerEmail,
        status: smtp ? ('pending' as const) : ('skipped' as const),
        attempts: 0,
        nextAttemptAt: smtp ? now : null,
        messageId: null,
        lastError: null,
        sentAt: null,
        createdAt: now,
        updatedAt: now,
      });
      await this.repo.insertEmail(email);
      return this.render(i, email);
    });
  }

  /**
   * `void` (extension): from draft or open, unless a checkout of the invoice is funded. An open
   * checkout is ended in the same transaction (expired), so its page and funding terms stop
   * offering it (docs/decisions.md "Void with an open checkout").
   * @throws AppError not_found; 409 invalid_request from paid/void, or with a funded checkout
   *   (details.reason checkout_funded, details.checkoutSessionId).
   */
  /**
   * Step one of void (docs/architecture.md §11, §13), run before the transaction holds anything:
   * burns on chain (`voidTerms`, by the terms signer) the escrow id of every unfunded checkout of
   * the invoice, so terms already handed to a buyer can no longer be funded. A checkout the chain
   * shows funded is refused here, even when the indexer has not applied it yet. Burning twice is
   * harmless (an id already voided is skipped), so a retried void may run this again.
   * @throws AppError 404 not_found; 409 invalid_request (reason checkout_funded).
   */
  async voidOnChain(principal: Principal, id: string): Promise<void> {
    if (!(await this.repo.findForOrganization(principal.organizationId, id))) throw AppError.notFound('invoice');
    const sessions = await this.tx.withTransaction(() => this.checkout.invoiceSessionsForUpdate(id));
    const gateway = this.escrowChain.gateway;
    for (const s of sessions) {
      if (isFunded(s.status) || s.status === 'released') continue; // the transactional step refuses it
      const escrowKey = await this.checkout.currentEscrowKey(s.id);
      const state = (await gateway.getOnChainEscrow(escrowKey)).state;
      if (state === 'voided') continue;
      if (state !== 'none') {
        throw new AppError('invalid_request', `a checkout of this invoice is funded on chain (${state}); refund it through the escrow before voiding`, {
          reason: 'checkout_funded',
          checkoutSessionId: s.id,
          checkoutStatus: state,
        }, 409);
      }
      try {
        await gateway.voidTerms(this.escrowChain.termsSigner, escrowKey);
      } catch (err) {
        if ((await gateway.getOnChainEscrow(escrowKey)).state !== 'voided') throw err;
      }
    }
  }

  async void(principal: Principal, id: string): Promise<InvoiceDto> {
    return this.tx.withTransaction(async () => {
      if (!(await this.repo.findForOrganization(principal.organizationId, id))) throw AppError.notFound('invoice');
      // Lock order everywhere: the invoice's checkout rows, then the invoice row (the ledger updates a checkout, then its invoice).
      await this.checkout.invoiceSessionsForUpdate(id);
      const i = (await this.repo.findForOrganization(principal.organizationId, id, true))!;
      invoiceAfter(i.status, 'void');
      const sessions = await this.checkout.invoiceSessionsForUpdate(id);
      const funded = sessions.find((s) => isFunded(s.status) || s.status === 'released');
      if (funded) {
        throw new AppError(
          'invalid_request',
          `invoice ${i.number ?? i.id} has a funded checkout (${funded.status}); refund it through the escrow before voiding`,
          { reason: 'checkout_funded', status: i.status, allowed: [], checkoutSessionId: funded.id, checkoutStatus: funded.status },
          409,
        );
      }
      for (const s of sessions) await this.checkout.expireNow(s.id);
      i.status = 'void';
      i.voidedAt = new Date();
      const saved = await this.repo.save(i);
      return this.render(saved, (await this.repo.latestEmails([i.id])).get(i.id));
    });
  }

  /**
   * The invoice page's view (public by id, docs/architecture.md §16): drafts are not shown (404).
   * While open it reuses the invoice's live checkout or mints one: one non-terminal checkout per
   * invoice (partial unique index); a replacement only after the previous one is refunded,
   * cancelled, or past its terms' deadline by {@link TERMS_CLOCK_MARGIN_MS}.
   * @throws AppError not_found.
   */
  async pageView(id: string): Promise<InvoicePageView> {
    const found = await this.repo.findById(id);
    if (!found || found.status === 'draft') throw AppError.notFound('invoice');
    if (found.status !== 'open') return this.view(found, found.status === 'paid' ? 'paid' : 'void', null);
    return this.tx.withTransaction(async () => {
      const now = Date.now();
      const locked = await this.checkout.invoiceSessionsForUpdate(id);
      for (const s of locked) {
        if (s.status === 'expired' && Date.parse(s.expiresAt) + TERMS_CLOCK_MARGIN_MS <= now) await this.checkout.expireNow(s.id);
      }
      const i = (await this.repo.findById(id, true))!;
      if (i.status !== 'open') return this.view(i, i.status === 'paid' ? 'paid' : 'void', null);
      const sessions = await this.checkout.invoiceSessionsForUpdate(id);
      const live = sessions.find((s) => s.status === 'open' || isFunded(s.status));
      if (live) return this.view(i, live.status === 'open' ? 'pay' : 'in_escrow', live);
      const closing = sessions.find((s) => s.status === 'expired' && Date.parse(s.expiresAt) + TERMS_CLOCK_MARGIN_MS > now);
      if (closing) return this.view(i, 'closing', closing);
      const minted = await this.checkout.mintForInvoice({
        organizationId: i.organizationId,
        invoiceId: i.id,
        number: i.number!,
        amountUnits: i.amountUnits,
        description: `Invoice ${i.number}`,
      });
      await this.repo.setCurrentCheckout(i.id, minted.id);
      i.checkoutSessionId = minted.id;
      return this.view(i, 'pay', minted);
    });
  }

  private async view(i: Invoice, state: InvoicePageView['state'], checkout: CheckoutSessionDto | null): Promise<InvoicePageView> {
    return { invoice: this.render(i, null), organizationId: i.organizationId, state, checkout };
  }

  /**
   * Runs in the transaction that changed one of the invoice's checkouts (the escrow ledger):
   * released → paid; a paid invoice whose paying checkout left released → open; a funded
   * checkout becomes the invoice's `checkoutSessionId`. A funding that lands on a void
   * invoice's checkout is logged: the merchant refunds it by declining the escrow.
   */
  private async followCheckout(change: CheckoutStatusChange): Promise<void> {
    if (!change.invoiceId) return;
    const i = await this.repo.findById(change.invoiceId);
    if (!i) return;
    const next = invoiceAfterCheckout(i.status, i.checkoutSessionId, change.id, change.status);
    if (next !== i.status) await this.repo.moveStatus(i.id, i.status, next, change.id);
    else if (i.status === 'open' && isFunded(change.status)) await this.repo.setCurrentCheckout(i.id, change.id);
    if (i.status === 'void' && isFunded(change.status)) {
      this.logger.error({ invoiceId: i.id, checkoutSessionId: change.id }, 'a checkout of a void invoice was funded; the merchant should decline the escrow to refund the buyer');
    }
  }

  private async priceLines(organizationId: string, inputs: InvoiceLineInputDto[]): Promise<StoredLineItem[]> {
    const out: StoredLineItem[] = [];
    for (const [n, line] of inputs.entries()) {
      const param = (field: string) => `lineItems.${n}.${field}`;
      const quantity = line.quantity ?? 1;
      let unit: bigint;
      let description: string;
      const given = line.unitAmount !== undefined ? this.amount(param('unitAmount'), line.unitAmount) : undefined;
      if (line.offeringId !== undefined) {
        const o = await this.offerings.activeTerms(organizationId, line.offeringId, param('offeringId'));
        if (given !== undefined && given !== o.amountUnits) {
          throw AppError.invalidParam(param('unitAmount'), `must equal the offering's amount (${formatAmount(o.amountUnits)}) or be left out`);
        }
        unit = o.amountUnits;
        description = line.description ?? o.name;
      } else {
        if (line.description === undefined) throw AppError.invalidParam(param('description'), 'is required without offeringId');
        if (given === undefined) throw AppError.invalidParam(param('unitAmount'), 'is required without offeringId');
        unit = given;
        description = line.description;
      }
      out.push({ description, quantity, unitAmountUnits: unit.toString(), amountUnits: (unit * BigInt(quantity)).toString(), offeringId: line.offeringId ?? null });
    }
    return out;
  }

  private total(lines: StoredLineItem[]): bigint {
    const total = lines.reduce((sum, l) => sum + BigInt(l.amountUnits), 0n);
    if (total > this.config.maxAmountUnits) {
      throw AppError.invalidParam('lineItems', `total ${formatAmount(total)} exceeds the maximum amount ${formatAmount(this.config.maxAmountUnits)}`);
    }
    return total;
  }

  private amount(param: string, text: string): bigint {
    try {
      return parseAmount(text, this.config.maxAmountUnits);
    } catch (err) {
      throw AppError.invalidParam(param, err instanceof AmountFormatError ? err.message : 'is invalid');
    }
  }
}
