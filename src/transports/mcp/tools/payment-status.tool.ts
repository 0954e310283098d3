import { Injectable } from '@nestjs/common';
import { z } from 'zod';
import { AppError } from '../../../common/errors/app-error';
import { CheckoutService } from '../../../modules/checkout/checkout.service';
import { EscrowService } from '../../../modules/escrow/escrow.service';
import { PaymentsService } from '../../../modules/payments/payments.service';
import { accessRefusal, authorize } from '../../../kernel/access';
import type { Access } from '../../../kernel/operation';
import type { McpToolContext, ServiceTool } from '../mcp-tool';
import { requireUuid } from './ids';

/** Who may read an agent's payment (GET /api/v1/payments/{id}). */
const READ_PAYMENT: Access = { scopes: ['agent:pay', 'agent:balance:read'], kinds: ['agent'] };
/** Who may read a checkout (GET /api/v1/checkout-sessions/{id}). */
const READ_CHECKOUT: Access = { scopes: ['checkout:read'] };
/** Who may see the checkout's escrow beside it (GET /api/v1/escrows/{id}). */
const READ_ESCROW: Access = { scopes: ['escrow:read'] };

/**
 * svc_get_payment_status: where a payment stands. `{paymentId}` → the agent's payment exactly as
 * GET /api/v1/payments/{id} renders it; `{checkoutSessionId}` → the checkout's status and its
 * escrow (for any credential that can read checkouts). Any credential may list the tool; reading
 * the object needs the object's read scope.
 */
@Injectable()
export class PaymentStatusTool implements ServiceTool<{ checkoutSessionId?: string; paymentId?: string }> {
  readonly name = 'svc_get_payment_status';
  readonly title = 'Payment status';
  readonly description = 'Status of an agent payment (paymentId, agent keys) or of a checkout session (checkoutSessionId) with its escrow, if funded.';
  readonly scopes = [];
  readonly annotations = { readOnlyHint: true, idempotentHint: true };
  readonly input = z.object({ paymentId: z.string().optional(), checkoutSessionId: z.string().optional() });
  constructor(
    private readonly checkout: CheckoutService,
    private readonly escrows: EscrowService,
    private readonly payments: PaymentsService,
  ) {}

  async run(ctx: McpToolContext, input: { checkoutSessionId?: string; paymentId?: string }) {
    if ((input.paymentId === undefined) === (input.checkoutSessionId === undefined)) {
      throw new AppError('invalid_request', 'Give exactly one of paymentId and checkoutSessionId', { fields: [{ param: 'paymentId', message: 'give exactly one of paymentId and checkoutSessionId' }] });
    }
    const p = ctx.principal;
    if (input.paymentId !== undefined) {
      // As GET /api/v1/payments/{id}: the same access, through the kernel's one check; the body is the payment.
      authorize(p, READ_PAYMENT);
      return this.payments.get(p, requireUuid(input.paymentId, 'payment'));
    }
    if (!input.checkoutSessionId) throw AppError.invalidParam('checkoutSessionId', 'is required');
    authorize(p, READ_CHECKOUT);
    const session = await this.checkout.get(p, requireUuid(input.checkoutSessionId, 'checkout session'));
    const escrow = session.escrowId && !accessRefusal(p, READ_ESCROW) ? await this.escrows.get(p, session.escrowId).catch(() => null) : null;
    return { checkoutSession: session, status: session.status, escrow };
  }
}
