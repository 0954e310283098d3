import { Injectable } from '@nestjs/common';
import { AppError } from '../../../common/errors/app-error';
import { accessRefusal, authorize } from '../../../kernel/access';
import { GET_CHECKOUT } from '../../../modules/checkout/checkout.operations';
import { CheckoutService } from '../../../modules/checkout/checkout.service';
import { GET_ESCROW } from '../../../modules/escrow/escrow.operations';
import { EscrowService } from '../../../modules/escrow/escrow.service';
import type { PaymentStatusQueryDto } from '../../../modules/payments/dto/payment.dto';
import { GET_PAYMENT, GET_PAYMENT_STATUS } from '../../../modules/payments/payments.operations';
import { PaymentsService } from '../../../modules/payments/payments.service';
import type { McpToolContext, ServiceTool } from '../mcp-tool';
import { requireUuid } from './ids';

/**
 * svc_get_payment_status (`get-payment-status`, DESIGN §15): where a payment stands. `{paymentId}` →
 * the payment exactly as GET /api/v1/payments/{id} renders it, with that route's access
 * (`get-payment`); `{checkoutSessionId}` → the checkout's status (access of `get-checkout`) and, once
 * funded, its escrow when the caller also has the access of `get-escrow` (else `escrow: null`,
 * docs/decisions.md). Any credential may list the tool. A refusal or failure of any read, the
 * escrow's included, is the tool's error body (DESIGN §4), never swallowed.
 */
@Injectable()
export class PaymentStatusTool implements ServiceTool<PaymentStatusQueryDto & Record<string, unknown>> {
  readonly name = 'svc_get_payment_status';
  readonly title = 'Payment status';
  readonly description = 'Status of a payment (paymentId: an agent key’s own, or one your organisation received) or of a checkout session (checkoutSessionId) with its escrow, if funded.';
  readonly annotations = { readOnlyHint: true, idempotentHint: true };
  readonly declaration = GET_PAYMENT_STATUS;
  constructor(
    private readonly checkout: CheckoutService,
    private readonly escrows: EscrowService,
    private readonly payments: PaymentsService,
  ) {}

  async run(ctx: McpToolContext, input: PaymentStatusQueryDto) {
    if ((input.paymentId === undefined) === (input.checkoutSessionId === undefined)) {
      throw new AppError('invalid_request', 'Give exactly one of paymentId and checkoutSessionId', { fields: [{ param: 'paymentId', message: 'give exactly one of paymentId and checkoutSessionId' }] });
    }
    const p = ctx.principal;
    if (input.paymentId !== undefined) {
      authorize(p, GET_PAYMENT);
      return this.payments.get(p, requireUuid(input.paymentId, 'payment'));
    }
    authorize(p, GET_CHECKOUT);
    const session = await this.checkout.get(p, requireUuid(input.checkoutSessionId, 'checkout session'));
    // The escrow is part of the answer when the caller may read escrows (docs/decisions.md); a failed read of it is the tool's error, never a silent null.
    const escrow = session.escrowId && !accessRefusal(p, GET_ESCROW) ? await this.escrows.get(p, session.escrowId) : null;
    return { checkoutSession: session, status: session.status, escrow };
  }
}
