import { Injectable, Logger } from '@nestjs/common';
import { EscrowChainEvent, idFromEscrowKey } from '@lib/chain';
import { v7 as uuidv7 } from 'uuid';
import { EventsService } from '../../common/outbox/events.service';
import { TransactionHost, TxHost } from '../../database/transaction';
import { CheckoutService } from '../checkout/checkout.service';
import { OrgsService } from '../orgs/orgs.service';
import { Escrow, EscrowChainEventRow } from './escrow.entity';
import { EscrowRepository } from './escrow.repository';
import { applyChainEvent, EscrowStateSnapshot, EscrowTransitionError } from './escrow.state';

/** What applying one chain event did. */
export interface LedgerResult {
  escrow: Escrow | null;
  /** false when this log (tx hash + log index) had been applied before. */
  applied: boolean;
}

/**
 * The one writer of escrow state (DESIGN §7). Applies a CheckoutEscrow event exactly once — the
 * API fast path, the chain indexer and the CLI all call it and converge — and, in the same
 * transaction, mirrors the status onto the checkout and writes the webhook event to the outbox.
 */
@Injectable()
export class EscrowLedger {
  private readonly logger = new Logger(EscrowLedger.name);

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
   */
  apply(e: EscrowChainEvent, fromAddress: string | null = null): Promise<LedgerResult> {
    return (this.txHost as TxHost).withTransaction(async () => {
      let escrow = await this.repo.findByKeyForUpdate(e.escrowKey);
      if (await this.repo.findChainEvent(e.txHash, e.logIndex)) return { escrow, applied: false };
      if (e.action === 'funded') {
        if (escrow) {
          this.logger.error({ escrowKey: e.escrowKey, txHash: e.txHash }, 'second Funded event for one escrow; ignored');
          return { escrow, applied: false };
        }
        escrow = await this.createFromFunding(e);
      } else if (!escrow) {
        this.logger.warn({ escrowKey: e.escrowKey, action: e.action, txHash: e.txHash }, 'event for an escrow never funded here; ignored');
        return { escrow: null, applied: false };
      }
      const { next, webhook } = applyChainEvent(e.action === 'funded' ? emptySnapshot() : snapshotOf(escrow), e, deliveredAt(escrow, e));
      await this.repo.insertChainEvent(this.eventRow(escrow.id, e, fromAddress));
      Object.assign(escrow, next);
      await this.repo.update(escrow);
      if (escrow.checkoutSessionId) {
        const mirrored = await this.checkout.mirrorEscrow(escrow.checkoutSessionId, escrow.id, escrow.status);
        if (mirrored && webhook) {
          await this.events.emit(mirrored.session.organizationId, webhook, mirrored.dto, mirrored.session.webhookUrl);
        }
      }
      return { escrow, applied: true };
    });
  }

  /**
   * Re-derives an escrow from its remaining applied events after a reorg removed some (DESIGN §7).
   * An escrow left with no events is deleted and its checkout is open again. Emits no events:
   * webhooks already sent are not retracted.
   */
  rebuild(escrowId: string): Promise<void> {
    return (this.txHost as TxHost).withTransaction(async () => {
      const escrow = await this.repo.findById(escrowId);
      if (!escrow) return;
      const rows = await this.repo.chainEvents(escrowId);
      if (rows.length === 0) {
        if (escrow.checkoutSessionId) await this.checkout.mirrorEscrow(escrow.checkoutSessionId, null, 'open');
        await this.repo.delete(escrow.id);
        return;
      }
      let state = emptySnapshot();
      for (const row of rows) {
        const e = { ...(row.data as object), action: row.action, escrowKey: escrow.escrowKey, txHash: row.txHash, logIndex: row.logIndex, blockNumber: row.blockNumber, blockHash: row.blockHash } as EscrowChainEvent;
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
      if (escrow.checkoutSessionId) await this.checkout.mirrorEscrow(escrow.checkoutSessionId, escrow.id, escrow.status);
    });
  }

  private async createFromFunding(e: Extract<EscrowChainEvent, { action: 'funded' }>): Promise<Escrow> {
    let checkoutId: string | null = null;
    try {
      checkoutId = idFromEscrowKey(e.escrowKey);
    } catch {
      checkoutId = null;
    }
    const session = checkoutId ? await this.checkout.findById(checkoutId) : null;
    const escrow = Object.assign(new Escrow(), {
      id: uuidv7(),
      escrowKey: e.escrowKey.toLowerCase(),
      checkoutSessionId: session?.id ?? null,
      status: 'funded' as const,
      buyerAddress: e.buyer,
      sellerAddress: e.seller,
      buyerOrganizationId: await this.orgs.organizationIdForAddress(e.buyer),
      sellerOrganizationId: session?.organizationId ?? (await this.orgs.organizationIdForAddress(e.seller)),
      amountUnits: e.amount,
      escrowTemplateId: session?.escrowTemplateId ?? 'custom',
      inspectionWindowSeconds: e.inspectionWindow,
      deliveredAt: null,
      autoReleaseAt: null,
    });
    await this.repo.insert(escrow);
    return escrow;
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
