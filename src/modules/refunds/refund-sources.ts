import { Injectable } from '@nestjs/common';
import { CheckoutService } from '../checkout/checkout.service';
import { EscrowService } from '../escrow/escrow.service';
import { PaymentsService } from '../payments/payments.service';
import type { ReceivedMoney } from '../payments/received-money';
import { X402Settlements } from '../payments/x402-settlements.service';
import type { RefundSourceType } from './refund.entity';

/**
 * A refund's source as the bound needs it, read under the source's row lock: who may refund it,
 * whether it is refundable now, the amount received (base units) and the addresses the money moves
 * between (DESIGN §21: from the address that received it, to the payer).
 */
export interface RefundSourceRow {
  id: string;
  organizationId: string;
  /** Null when the source is refundable; else why not (e.g. `escrow_not_released`). */
  notRefundable: string | null;
  /** The source's own status, for the 409's details. */
  status: string;
  received: bigint;
  fromAddress: string | null;
  toAddress: string | null;
}

/**
 * The row locks of refund sources (DESIGN §21), each through the module that owns the source's table
 * (docs/architecture.md "Ownership map"): checkouts, payments and x402 settlements. Each lock runs in
 * the caller's transaction (the CLS transaction host), so it holds until the refund's transaction
 * ends, as when refunds locked the rows by their own SQL.
 */
@Injectable()
export class RefundSources {
  constructor(
    private readonly checkouts: CheckoutService,
    private readonly escrows: EscrowService,
    private readonly payments: PaymentsService,
    private readonly settlements: X402Settlements,
  ) {}

  /**
   * The source `id` of `type` visible to `organizationId` as the party that received the money, locked
   * FOR UPDATE (the bound's lock, DESIGN §21); null when there is none. Must run in a transaction.
   * - checkout_session: the organisation's checkout; refundable once its escrow is `released` (unflagged);
   *   received = the escrow's amount, from = the escrow's seller, to = its buyer. The escrow row is read
   *   after the checkout's lock, unlocked, as before.
   * - payment, x402_settlement: one received by the organisation (paid to its handle); refundable once
   *   `succeeded` / `settled`; from = the address that received it, to = the payer.
   */
  async lock(type: RefundSourceType, id: string, organizationId: string): Promise<RefundSourceRow | null> {
    if (type === 'checkout_session') {
      const cs = await this.checkouts.lockForOrganization(organizationId, id);
      if (!cs) return null;
      const e = cs.escrowId ? await this.escrows.refundTerms(cs.escrowId) : null;
      const released = e?.status === 'released' && !e.flag;
      return {
        id: cs.id,
        organizationId: cs.organizationId,
        notRefundable: released ? null : 'not_released',
        status: cs.status,
        received: released ? e.amountUnits : 0n,
        fromAddress: e?.sellerAddress ?? null,
        toAddress: e?.buyerAddress ?? null,
      };
    }
    const row = type === 'payment' ? await this.payments.lockReceived(id, organizationId) : await this.settlements.lockReceived(id, organizationId);
    return row ? received(row, organizationId, type === 'payment' ? 'succeeded' : 'settled') : null;
  }
}

/** A received payment or settlement as the bound reads it: refundable in status `done`. */
function received(r: ReceivedMoney, organizationId: string, done: string): RefundSourceRow {
  const ok = r.status === done;
  return { id: r.id, organizationId, notRefundable: ok ? null : 'not_received', status: r.status, received: ok ? r.amount : 0n, fromAddress: r.payeeAddress, toAddress: r.payerAddress };
}
