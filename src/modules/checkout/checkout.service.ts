import { Injectable } from '@nestjs/common';
import { AmountFormatError, formatAmount, parseAmount } from '@lib/money';
import { v7 as uuidv7 } from 'uuid';
import { AppConfig } from '../../config/app-config';
import type { Principal } from '../../kernel/auth/principal';
import { AppError } from '../../common/errors/app-error';
import { IdempotentSteps } from '../../kernel/idempotency/idempotent.decorator';
import { ListPage, toPage } from '../../common/http/list.dto';
import { TransactionHost, TxHost } from '../../database/transaction';
import { CheckoutMapper } from './checkout.mapper';
import { CheckoutRepository } from './checkout.repository';
import { CheckoutSession, EscrowTemplateId } from './checkout.entity';
import { checkoutEscrowKey } from './checkout-escrow-key';
import { CheckoutSessionDto } from './dto/checkout-session.dto';
import { WebhookUrlService } from '../webhooks/webhook-url.service';
import { CreateCheckoutSessionDto } from './dto/create-checkout-session.dto';
import { kybRejected } from '../verification/verification.service';
import { OfferingsService, OfferingTerms } from '../offerings/offerings.service';
import { CheckoutHooks } from './checkout-hooks.service';
import { ModuleRef } from '@nestjs/core';
import { CheckoutPaymentsSource } from './checkout-payments.port';
import { latePort } from '../../common/late-port';

const MIN_TTL_SECONDS = 30 * 60;
const MAX_TTL_SECONDS = 24 * 3600;
const METADATA_MAX_KEYS = 50;
const METADATA_MAX_BYTES = 8 * 1024;

/** Inspection window after delivery per template, in hours (docs/architecture.md §7). */
export const TEMPLATE_INSPECTION_HOURS: Record<Exclude<EscrowTemplateId, 'custom'>, number> = {
  freelance: 7 * 24,
  physical: 14 * 24,
  digital: 3 * 24,
};

/**
 * The inspection window of a session in seconds: the template's, or for `custom`
 * `metadata.inspectionWindowHours` (integer 1–2160, default 168) (docs/architecture.md §7).
 * @throws AppError invalid_request naming metadata.inspectionWindowHours when out of range.
 */
export function inspectionWindowSeconds(template: EscrowTemplateId, metadata: Record<string, unknown> | null): number {
  if (template !== 'custom') return TEMPLATE_INSPECTION_HOURS[template] * 3600;
  const hours = metadata?.inspectionWindowHours ?? 168;
  if (typeof hours !== 'number' || !Number.isInteger(hours) || hours < 1 || hours > 2160) {
    throw AppError.invalidParam('metadata.inspectionWindowHours', 'must be an integer number of hours from 1 to 2160');
  }
  return hours * 3600;
}

/** Checkout sessions of an organisation (docs/api.md CheckoutSession; docs/architecture.md §6–7). */
@Injectable()
export class CheckoutService {
  constructor(
    private readonly repo: CheckoutRepository,
    private readonly mapper: CheckoutMapper,
    private readonly config: AppConfig,
    private readonly txHost: TransactionHost,
    private readonly webhookUrls: WebhookUrlService,
    private readonly offerings: OfferingsService,
    private readonly hooks: CheckoutHooks,
    private readonly moduleRef: ModuleRef,
  ) {}

  /**
   * Validates a create request and builds the session row, with no network call: when the
   * `webhookUrl` host must be resolved (DNS), that check is handed back as `resolveWebhookUrl`
   * for the caller to run before opening a transaction (docs/architecture.md §5, §8).
   * @throws AppError invalid_request for an amount over MAX_AMOUNT, oversized metadata, a bad
   *   inspection window, an expiresAt outside 30 min–24 h from now, or a `webhookUrl` the SSRF
   *   guard refuses (details.param webhookUrl, details.reason; `resolveWebhookUrl` throws the same,
   *   `unresolvable` also when DNS does not answer within WEBHOOK_DNS_TIMEOUT_MS). The KYB gate
   *   (403 kyb_rejected, docs/architecture.md §12) is {@link insert}'s: it runs inside the INSERT.
   *   With `offeringId` (docs/architecture.md §11): an unknown or archived offering (param
   *   offeringId), `quantity` without one (param quantity), or an amount other than the
   *   offering's amount × quantity (param amount).
   */
  async draft(principal: Principal, input: CreateCheckoutSessionDto): Promise<{ session: CheckoutSession; resolveWebhookUrl?: () => Promise<void> }> {
    let amountUnits: bigint;
    try {
      amountUnits = parseAmount(input.amount, this.config.maxAmountUnits);
    } catch (err) {
      throw AppError.invalidParam('amount', err instanceof AmountFormatError ? err.message : 'is invalid');
    }
    const metadata = input.metadata ?? null;
    if (metadata) {
      if (Object.keys(metadata).length > METADATA_MAX_KEYS) throw AppError.invalidParam('metadata', `must have at most ${METADATA_MAX_KEYS} keys`);
      if (Buffer.byteLength(JSON.stringify(metadata)) > METADATA_MAX_BYTES) throw AppError.invalidParam('metadata', 'must be at most 8 kB as JSON');
    }
    const webhookUrl = input.webhookUrl;
    let resolveWebhookUrl: (() => Promise<void>) | undefined;
    if (webhookUrl) {
      // Without a host name to resolve the check makes no network call and runs here.
      if (this.webhookUrls.needsResolution(webhookUrl)) resolveWebhookUrl = () => this.webhookUrls.assertRegistrable(webhookUrl, 'webhookUrl');
      else await this.webhookUrls.assertRegistrable(webhookUrl, 'webhookUrl');
    }
    const offering = await this.offeringOf(principal.organizationId, input, amountUnits);
    const template = input.escrowTemplateId ?? (offering?.escrowTemplateId as EscrowTemplateId | undefined) ?? 'custom';
    inspectionWindowSeconds(template, metadata);
    const now = Date.now();
    let expiresAt = new Date(now + this.config.env.CHECKOUT_DEFAULT_TTL_SECONDS * 1000);
    if (input.expiresAt) {
      expiresAt = new Date(input.expiresAt);
      const ttl = (expiresAt.getTime() - now) / 1000;
      if (!(ttl >= MIN_TTL_SECONDS - 5 && ttl <= MAX_TTL_SECONDS + 5)) {
        throw AppError.invalidParam('expiresAt', 'must be between 30 minutes and 24 hours from now');
      }
    }
    const session = Object.assign(new CheckoutSession(), {
      id: uuidv7(),
      organizationId: principal.organizationId,
      amountUnits,
      description: input.description,
      status: 'open' as const,
      orderId: input.orderId ?? null,
      shopDomain: input.shopDomain ?? null,
      redirectUrl: input.redirectUrl ?? null,
      webhookUrl: webhookUrl ?? null,
      escrowTemplateId: template,
      metadata,
      escrowId: null,
      escrowAttempt: 0,
      expiresAt,
      offeringId: offering?.id ?? null,
      quantity: offering ? (input.quantity ?? 1) : null,
      invoiceId: null,
    });
    return { session, resolveWebhookUrl };
  }

  /**
   * The work of the operation `create-checkout` (checkout.operations.ts; POST /checkout-sessions
   * returns it as it is, so the REST hot path allocates nothing more): {@link draft} now, then
   * `prepare` = the `webhookUrl` DNS check when one is needed (no transaction held,
   * docs/architecture.md §5) and `run` = {@link insert} in the key's transaction.
   * @throws AppError as {@link draft} (before any work is returned); `run` as {@link insert}.
   */
  async createWork(principal: Principal, input: CreateCheckoutSessionDto): Promise<IdempotentSteps<void, CheckoutSessionDto>> {
    const { session, resolveWebhookUrl } = await this.draft(principal, input);
    return new IdempotentSteps(() => this.insert(session), resolveWebhookUrl);
  }

  /**
   * {@link draft} then {@link insert}, for callers inside the service that need no transport
   * idempotency (agent escrows create the seller's session in their reservation transaction). A
   * `webhookUrl` needing DNS is resolved in between, so callers holding a transaction must not
   * pass one.
   */
  async create(principal: Principal, input: CreateCheckoutSessionDto): Promise<CheckoutSessionDto> {
    const { session, resolveWebhookUrl } = await this.draft(principal, input);
    await resolveWebhookUrl?.();
    return this.insert(session);
  }

  /**
   * Inserts a {@link draft}ed session in a transaction (joined when the caller has one), unless the
   * organisation's verification is rejected: the INSERT checks that itself (docs/decisions.md,
   * "KYB gate in the INSERT"), so under an Idempotency-Key the refusal is recorded and replayed.
   * @throws AppError 403 kyb_rejected (nothing written).
   */
  async insert(session: CheckoutSession): Promise<CheckoutSessionDto> {
    const saved = await (this.txHost as TxHost).withTransaction(() => this.repo.insertUnlessRejected(session));
    if (!saved) throw kybRejected();
    return this.mapper.toDto(saved);
  }

  /** The offering a create names, checked against the amount (docs/architecture.md §11); null without offeringId. */
  private async offeringOf(organizationId: string, input: CreateCheckoutSessionDto, amountUnits: bigint): Promise<OfferingTerms | null> {
    if (input.offeringId === undefined) {
      if (input.quantity !== undefined) throw AppError.invalidParam('quantity', 'is only accepted with offeringId', { param: 'quantity' });
      return null;
    }
    const offering = await this.offerings.activeTerms(organizationId, input.offeringId);
    const expected = offering.amountUnits * BigInt(input.quantity ?? 1);
    if (amountUnits !== expected) {
      throw AppError.invalidParam('amount', `must equal the offering's amount × quantity (${formatAmount(expected)})`, { param: 'amount', expected: formatAmount(expected) });
    }
    return offering;
  }

  /**
   * Mints the checkout session of an invoice in the caller's transaction (docs/architecture.md §11):
   * `open`, template custom, `orderId` = the invoice number, the default lifetime. A partial
   * unique index allows one non-terminal session per invoice; the caller holds the invoice row lock.
   */
  async mintForInvoice(input: { organizationId: string; invoiceId: string; number: string; amountUnits: bigint; description: string }): Promise<CheckoutSessionDto> {
    const session = Object.assign(new CheckoutSession(), {
      id: uuidv7(),
      organizationId: input.organizationId,
      amountUnits: input.amountUnits,
      description: input.description.slice(0, 1000),
      status: 'open' as const,
      orderId: input.number,
      shopDomain: null,
      redirectUrl: null,
      webhookUrl: null,
      escrowTemplateId: 'custom' as const,
      metadata: null,
      escrowId: null,
      escrowAttempt: 0,
      expiresAt: new Date(Date.now() + this.config.env.CHECKOUT_DEFAULT_TTL_SECONDS * 1000),
      offeringId: null,
      quantity: null,
      invoiceId: input.invoiceId,
    });
    return this.mapper.toDto(await this.repo.insert(session));
  }

  /** The sessions of an invoice, newest first, row-locked in the caller's transaction. */
  async invoiceSessionsForUpdate(invoiceId: string): Promise<CheckoutSessionDto[]> {
    const now = new Date();
    return (await this.repo.forInvoiceForUpdate(invoiceId)).map((s) => this.mapper.toDto(s, now));
  }

  /**
   * Ends an `open` session now, in the caller's transaction: status expired, so the pay page and
   * funding terms stop offering it (voiding its invoice; docs/decisions.md "Void with an open checkout").
   */
  expireNow(id: string): Promise<void> {
    return this.repo.expireNow(id);
  }

  /** @throws AppError not_found when absent or another organisation's (docs/api.md: 404 when absent). */
  async get(principal: Principal, id: string): Promise<CheckoutSessionDto> {
    const session = await this.repo.findForOrganization(principal.organizationId, id);
    if (!session) throw AppError.notFound('checkout session');
    return this.mapper.toDto(session);
  }

  /**
   * The checkout `id` of `organizationId`, locked FOR UPDATE until the caller's transaction ends (a
   * refund's bound, DESIGN §21), or null. Must run in a transaction.
   */
  lockForOrganization(organizationId: string, id: string): Promise<CheckoutSession | null> {
    return this.repo.lockForOrganization(organizationId, id);
  }

  /** The session by id, any organisation (for the chain: funding names a checkout by id). */
  findById(id: string): Promise<CheckoutSession | null> {
    return this.repo.findById(id);
  }

  /**
   * The only buyer a checkout may be funded by, when it has one (docs/architecture.md §18): a checkout
   * created for an agent escrow is bound to the agent's session signer, read from the escrow Payment
   * attached to it (so no checkout metadata can claim it). Null for every other checkout.
   */
  requiredBuyer(id: string): Promise<string | null> {
    return this.payments().escrowPayer(id);
  }

  /** The payments module (which owns the `payments` table) depends, through agent escrows, on this one: resolved at call time. */
  private readonly payments = latePort(() => this.moduleRef, CheckoutPaymentsSource);

  /**
   * Mirrors an escrow's status onto its checkout in the caller's transaction (docs/architecture.md §7: the
   * checkout's status is derived from its escrow). `status: 'open'` with no escrow undoes a
   * funding that a chain reorg removed.
   * @returns the session as rendered after the change (the data of its webhook event), or null if absent.
   */
  async mirrorEscrow(id: string, escrowId: string | null, status: CheckoutSession['status']): Promise<{ session: CheckoutSession; dto: CheckoutSessionDto } | null> {
    await this.repo.updateEscrowState(id, escrowId, status);
    const session = await this.repo.findById(id);
    if (!session) return null;
    if (session.invoiceId) await this.hooks.statusChanged({ id, organizationId: session.organizationId, invoiceId: session.invoiceId, status });
    return { session, dto: this.mapper.toDto(session) };
  }

  /**
   * A chain reorg took the checkout's funding off the chain (DESIGN §22 "Reorgs unwind"): the checkout
   * is `open` again with no escrow, its count of reversed fundings goes up by one, and its invoice (if
   * any) hears the status. In the caller's transaction; the caller writes `checkout.funding_reversed`.
   * @returns the session after the change and its DTO, or null when it does not exist.
   */
  async fundingReversed(id: string): Promise<{ session: CheckoutSession; dto: CheckoutSessionDto } | null> {
    await this.repo.countFundingReversal(id);
    return this.mirrorEscrow(id, null, 'open');
  }

  /**
   * After the ledger applied a buyer's cancel of escrow `escrowId`: reopens the checkout under a new
   * escrow id while it has not expired (docs/architecture.md §13, §16; {@link CheckoutRepository.reopenAfterCancel}),
   * telling its invoice, if any. In the caller's transaction.
   * @returns true when reopened.
   */
  async reopenAfterCancel(id: string, escrowId: string): Promise<boolean> {
    // A payment is attached to its checkout when the checkout is created (the agent escrow's
    // reservation), never later, so this read and the UPDATE below need no common statement.
    if (await this.payments().hasPayment(id)) return false;
    const reopened = await this.repo.reopenAfterCancel(id, escrowId);
    if (!reopened) return false;
    if (reopened.invoiceId) await this.hooks.statusChanged({ id, ...reopened, status: 'open' });
    return true;
  }

  /** The on-chain escrow id (bytes32 hex) a checkout offers now: its id under its current escrow attempt. */
  async currentEscrowKey(id: string): Promise<string> {
    const session = await this.repo.findById(id);
    if (!session) throw AppError.notFound('checkout session');
    return checkoutEscrowKey(session);
  }

  /** Records expiry of open sessions past expiresAt (worker job); returns how many. */
  expireDue(now = new Date()): Promise<number> {
    return (this.txHost as TxHost).withTransaction(() => this.repo.expireDue(now));
  }

  async list(principal: Principal, limit = 10, startingAfter?: string): Promise<ListPage<CheckoutSessionDto>> {
    const rows = await this.repo.list(principal.organizationId, limit, startingAfter);
    const now = new Date();
    return toPage(rows, limit, (r) => this.mapper.toDto(r, now));
  }

  /** Adds `delta` base units to the checkout's refunded amount, in the caller's transaction (the refunds module, DESIGN §21). */
  addRefunded(id: string, delta: bigint): Promise<void> {
    return this.repo.addRefunded(id, delta);
  }

  /** The checkout's refunded amount in base units (succeeded refunds; 0 for an unknown id). */
  refundedUnits(id: string): Promise<bigint> {
    return this.repo.refundedUnits(id);
  }
}
