import { Injectable } from '@nestjs/common';
import { formatAmount } from '@lib/money';
import { AppConfig } from '../../config/app-config';
import { FeesService } from '../fees/fees.service';
import { CheckoutSessionDto } from './dto/checkout-session.dto';
import { CheckoutSession, CheckoutStatus } from './checkout.entity';

export { ESCROW_TEMPLATES, CHECKOUT_STATUSES } from './checkout.entity';
export type { CheckoutStatus, EscrowTemplateId } from './checkout.entity';

/** Renders a checkout session as the API shows it (explicit field list, docs/architecture.md, Conventions 5). */
@Injectable()
export class CheckoutMapper {
  constructor(
    private readonly config: AppConfig,
    private readonly fees: FeesService,
  ) {}

  toDto(s: CheckoutSession, now = new Date()): CheckoutSessionDto {
    return {
      id: s.id,
      amount: formatAmount(s.amountUnits),
      refundedAmount: formatAmount(s.refundedUnits ?? 0n),
      description: s.description,
      status: effectiveStatus(s, now),
      settlement: 'escrow',
      orderId: s.orderId,
      shopDomain: s.shopDomain,
      escrowId: s.escrowId,
      escrowTemplateId: s.escrowTemplateId,
      payUrl: `${this.config.env.CHECKOUT_BASE_URL.replace(/\/$/, '')}/checkout/${s.id}`,
      redirectUrl: s.redirectUrl,
      metadata: s.metadata,
      fee: this.fees.quote('checkout', s.amountUnits),
      offeringId: s.offeringId ?? null,
      quantity: s.quantity ?? null,
      invoiceId: s.invoiceId ?? null,
      expiresAt: s.expiresAt.toISOString(),
      createdAt: s.createdAt.toISOString(),
      updatedAt: s.updatedAt.toISOString(),
    };
  }
}

/** An open session past its expiresAt is expired even before the worker's expiry job records it. */
export function effectiveStatus(s: Pick<CheckoutSession, 'status' | 'expiresAt'>, now: Date): CheckoutStatus {
  return s.status === 'open' && s.expiresAt.getTime() <= now.getTime() ? 'expired' : s.status;
}
