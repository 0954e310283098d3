import { Injectable, Logger } from '@nestjs/common';
import { EscrowChainEvent, escrowKeyParts, idFromEscrowKey } from '@lib/chain';
import { v7 as uuidv7 } from 'uuid';
import { getAddress } from 'ethers';
import { EventsService } from '../../common/outbox/events.service';
import { WebhookEvent } from '../../common/outbox/webhook-event';
import { TransactionHost, TxHost } from '../../database/transaction';
import { CheckoutService, inspectionWindowSeconds } from '../checkout/checkout.service';
import { OrgsService } from '../orgs/orgs.service';
import { Escrow, EscrowChainEventRow, TermsMismatch } from './escrow.entity';
import { EscrowRepository } from './escrow.repository';
import { applyChainEvent, EscrowStateSnapshot, EscrowTransitionError } from './escrow.state';

/** What applying one chain event did. */
export interface ProjectionResult {
  escrow: Escrow | null;
  /** false when this log (tx hash + log index) had been applied before, or was ignored. */
  applied: boolean;
}

type CheckoutSessionRow = NonNullable<Awaited<ReturnType<CheckoutService['findById']>>>;

/**
 * The projector of CheckoutEscrow chain events, and so the one writer of escrow state
 * (docs/architecture.md §7): escrow state is the fold of its applied events. Applies an event exactly
 * once — the API fast path, the chain indexer and the CLI all call it and converge — and, in the
 * same transaction, mirrors the status onto the checkout and writes the webhook event to the
 * outbox, with an event id derived from the log (tx hash, log index, type), so a log re-applied
 * after a reorg carries the same id.
 *
 * - A Funded event creates the escrow row with `INSERT … ON CONFLICT DO NOTHING`, then the event is
 *   applied under the row lock: concurrent recorders of one funding never collide.
 * - A Funded event whose amount, seller or inspection window differ from the checkout and its
 *   organisation's payout address (or, for an agent escrow's checkout, whose buyer is not the
 *   agent's signer) flags the escrow (`terms_mismatch`): it is recorded but never
 *   reaches the checkout or webhooks.
 * - An event older than the escrow's newest applied (block, log index) — the API applied a later
 *   action first — is inserted and the escrow refolded in chain order. Its status cannot change
 *   (the newest event fixes it), so it sends no webhook.
 */
@Injectable()
export class EscrowProjector {
  private readonly logger = new Logger(EscrowProjector.name);

  constructor(
    private readonly repo: EscrowRepository,
    private readonly checkout: CheckoutService,
    private readonly orgs: OrgsService,
    private readonly events: EventsService,
    private readonly txHost: TransactionHost,
  ) {}

  /**
   * @param fromAddress the transaction sender when known (API fast path), else null.
   * @returns the escrow after the event, and whether the event was new.
   * @throws EscrowTransitionError when the event cannot follow the escrow's events even in chain
   *   order (nothing is written; the indexer sets such an event aside).
   */
  apply(e: EscrowChainEvent, fromAddress: string | null = null): Promise<ProjectionResult> {
    return (this.txHost as TxHost).withTransaction(async () => {
      if (e.action === 'funded') await this.repo.insertIfAbsent(await this.fromFunding(e));
      const escrow = await this.repo.findByKeyForUpdate(e.escrowKey.toLowerCase());
      if (await this.repo.findChainEvent(e.txHash, e.logIndex)) return { escrow, applied: false };
      if (!escrow) {
        this.logger.warn({ escrowKey: e.escrowKey, action: e.action, txHash: e.txHash }, 'event for an escrow never funded here; ignored');
        return { escrow: null, applied: false };
      }
      const rows = await this.repo.chainEvents(escrow.id);
      if (e.action === 'funded' && rows.some((r) => r.action === 'funded')) {
        this.logger.error({ escrowKey: e.escrowKey, txHash: e.txHash }, 'second Funded event for one escrow; ignored');
        return { escrow, applied: false };
      }
      const last = rows.at(-1);
      if (last && (e.blockNumber < last.blockNumber || (e.blockNumber === last.blockNumber && e.logIndex < last.logIndex))) {
        return { escrow: await this.insertLate(escrow, e, fromAddress), applied: true };
      }
      const { next, webhook } = applyChainEvent(e.action === 'funded' ? emptySnapshot() : snapshotOf(escrow), e, deliveredAt(escrow, e));
      await this.repo.insertChainEvent(this.eventRow(escrow.id, e, fromAddress));
      Object.assign(escrow, next);
      await this.repo.update(escrow);
      if (escrow.checkoutSessionId && !escrow.flag) {
        const mirrored = await this.checkout.mirrorEscrow(escrow.checkoutSessionId, escrow.id, escrow.status);
        if (mirrored && webhook) {
          await this.events.emit(mirrored.session.organizationId, webhook, mirrored.dto, mirrored.session.webhookUrl, {
            // Transaction, escrow and action, not the log index: the same transaction re-mined after a
            // reorg may sit elsewhere in its block, and must keep its event id (docs/decisions.md).
            // A funding applied after a reorg reversed one (checkout.funding_reversed) is news again: a new id.
            sourceId: `${e.txHash.toLowerCase()}:${e.escrowKey.toLowerCase()}:${e.action}${e.action === 'funded' && mirrored.session.fundingReversals > 0 ? `:after-reversal-${mirrored.session.fundingReversals}` : ''}`,
          });
        }
        // The buyer took the money back before the seller accepted: the checkout is payable again
        // under a new escrow id (docs/architecture.md §13, §16; docs/decisions.md "Cancel reopens").
        if (e.action === 'cancelled' && (await this.checkout.reopenAfterCancel(escrow.checkoutSessionId, escrow.id))) {
          this.logger.log({ checkoutSessionId: escrow.checkoutSessionId, escrowId: escrow.id }, 'buyer cancelled; checkout reopened under a new escrow id');
        }
      }
      return { escrow, applied: true };
    });
  }

  /**
   * Re-derives an escrow from its remaining applied events after a reorg removed some
   * (docs/architecture.md §7). An escrow left with no events (its funding left the chain) is deleted
   * and its checkout is open again; the merchant hears it as `checkout.funding_reversed` (DESIGN §22
   * "Reorgs unwind"; an extension event, docs/decisions.md), written after the `checkout.funded` it
   * reverses, with an id derived from the escrow key and the checkout's count of reversals. Otherwise
   * emits no events: webhooks already sent are not retracted.
   */
  rebuild(escrowId: string): Promise<void> {
    return (this.txHost as TxHost).withTransaction(async () => {
      const escrow = await this.repo.findById(escrowId);
      if (!escrow) return;
      const rows = await this.repo.chainEvents(escrowId);
      if (rows.length === 0) {
        if (escrow.checkoutSessionId && !escrow.flag) {
          const reopened = await this.checkout.fundingReversed(escrow.checkoutSessionId);
          if (reopened) {
            await this.events.emit(reopened.session.organizationId, WebhookEvent.CheckoutFundingReversed, reopened.dto, reopened.session.webhookUrl, {
              sourceId: `${escrow.escrowKey}:funding_reversed:${reopened.session.fundingReversals}`,
            });
          }
        }
        await this.repo.delete(escrow.id);
        return;
      }
      let state = emptySnapshot();
      for (const row of rows) {
        const e = eventOf(escrow, row);
        try {
          state = applyChainEvent(state, e, deliveredAt(escrow, e)).next;
        } catch (err) {
          if (!(err instanceof EscrowTransitionError)) throw err;
          this.logger.error({ escrowId, err: err.message }, 'applied events no longer fold; keeping the last good state');
          break;
        }
      }
      Object.assign(escrow, state);
      await this.repo.update(escrow);
      if (escrow.checkoutSessionId && !escrow.flag) await this.checkout.mirrorEscrow(escrow.checkoutSessionId, escrow.id, escrow.status);
    });
  }

  /** Inserts an event older than the newest applied one and refolds all events in chain order; throws (rolling back) when they do not fold. */
  private async insertLate(escrow: Escrow, e: EscrowChainEvent, fromAddress: string | null): Promise<Escrow> {
    const before = escrow.status;
    await this.repo.insertChainEvent(this.eventRow(escrow.id, e, fromAddress));
    let state = emptySnapshot();
    for (const row of await this.repo.chainEvents(escrow.id)) {
      const event = eventOf(escrow, row);
      state = applyChainEvent(state, event, deliveredAt(escrow, event)).next;
    }
    Object.assign(escrow, state);
    await this.repo.update(escrow);
    if (escrow.status !== before && escrow.checkoutSessionId && !escrow.flag) {
      await this.checkout.mirrorEscrow(escrow.checkoutSessionId, escrow.id, escrow.status);
    }
    this.logger.warn({ escrowId: escrow.id, action: e.action, txHash: e.txHash, status: escrow.status }, 'older chain event applied late; escrow refolded in chain order');
    return escrow;
  }

  /** The escrow row a Funded event creates, flagged when its terms differ from the checkout's. */
  private async fromFunding(e: Extract<EscrowChainEvent, { action: 'funded' }>): Promise<Escrow> {
    let checkoutId: string | null = null;
    try {
      checkoutId = idFromEscrowKey(e.escrowKey);
    } catch {
      checkoutId = null;
    }
    const session = checkoutId ? await this.checkout.findById(checkoutId) : null;
    const mismatches = session ? await this.termsMismatches(e, session) : [];
    const attempt = escrowKeyParts(e.escrowKey).attempt;
    if (session && attempt !== session.escrowAttempt) {
      mismatches.push({ field: 'escrowAttempt', expected: String(session.escrowAttempt), actual: String(attempt) });
    }
    if (mismatches.length) {
      this.logger.error({ escrowKey: e.escrowKey, txHash: e.txHash, checkoutSessionId: session?.id, mismatches }, 'funding terms differ from the checkout; escrow flagged');
    }
    return Object.assign(new Escrow(), {
      id: uuidv7(),
      escrowKey: e.escrowKey.toLowerCase(),
      checkoutSessionId: session?.id ?? null,
      status: 'funded' as const,
      buyerAddress: e.buyer,
      sellerAddress: e.seller,
      buyerOrganizationId: await this.orgs.organizationIdForAddress(e.buyer),
      // The checkout's organisation, never one found by address (issue 28): no checkout, no seller organisation.
      sellerOrganizationId: session?.organizationId ?? null,
      amountUnits: e.amount,
      escrowTemplateId: session?.escrowTemplateId ?? 'custom',
      inspectionWindowSeconds: e.inspectionWindow,
      deliveredAt: null,
      autoReleaseAt: null,
      flag: mismatches.length ? ('terms_mismatch' as const) : null,
      flagDetails: mismatches.length ? { mismatches } : null,
    });
  }

  /**
   * Compares a Funded event with what the service signs for the checkout (docs/architecture.md §7):
   * amount (base units), seller (the organisation's payout address now), inspection window (seconds)
   * and, for an agent escrow's checkout, the buyer (the agent's session signer, §18).
   */
  private async termsMismatches(e: Extract<EscrowChainEvent, { action: 'funded' }>, session: CheckoutSessionRow): Promise<TermsMismatch[]> {
    const out: TermsMismatch[] = [];
    if (e.amount !== session.amountUnits) out.push({ field: 'amount', expected: session.amountUnits.toString(), actual: e.amount.toString() });
    const payout = (await this.orgs.getOrganization(session.organizationId))?.payoutAddress ?? null;
    if (!payout || payout.toLowerCase() !== e.seller.toLowerCase()) out.push({ field: 'seller', expected: payout ?? 'none', actual: e.seller });
    let window: number | null;
    try {
      window = inspectionWindowSeconds(session.escrowTemplateId, session.metadata);
    } catch {
      window = null;
    }
    if (window !== Number(e.inspectionWindow)) out.push({ field: 'inspectionWindow', expected: String(window ?? 'invalid'), actual: String(e.inspectionWindow) });
    const buyer = await this.checkout.requiredBuyer(session.id);
    if (buyer && buyer.toLowerCase() !== e.buyer.toLowerCase()) out.push({ field: 'buyer', expected: getAddress(buyer), actual: getAddress(e.buyer) });
    return out;
  }

  private eventRow(escrowId: string, e: EscrowChainEvent, fromAddress: string | null): EscrowChainEventRow {
    const { action, escrowKey: _k, txHash, logIndex, blockNumber, blockHash, ...data } = e;
    return Object.assign(new EscrowChainEventRow(), {
      id: uuidv7(),
      escrowId,
      action,
      txHash: txHash.toLowerCase(),
      logIndex,
      blockNumber,
      blockHash,
      fromAddress,
      data: JSON.parse(JSON.stringify(data, (_, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))) as Record<string, unknown>,
    });
  }
}

/** The chain event a stored row records (its data columns as decoded). */
function eventOf(escrow: Escrow, row: EscrowChainEventRow): EscrowChainEvent {
  return { ...(row.data as object), action: row.action, escrowKey: escrow.escrowKey, txHash: row.txHash, logIndex: row.logIndex, blockNumber: row.blockNumber, blockHash: row.blockHash } as EscrowChainEvent;
}

function emptySnapshot(): EscrowStateSnapshot {
  return { status: null, deliveredAt: null, autoReleaseAt: null };
}

function snapshotOf(e: Escrow): EscrowStateSnapshot {
  return { status: e.status, deliveredAt: e.deliveredAt, autoReleaseAt: e.autoReleaseAt };
}

/** Delivery time from the Delivered event (autoReleaseAt − inspection window), without a block lookup. */
function deliveredAt(escrow: Escrow, e: EscrowChainEvent): Date {
  return e.action === 'delivered' ? new Date((Number(e.autoReleaseAt) - escrow.inspectionWindowSeconds) * 1000) : new Date();
}
