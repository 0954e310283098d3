import { Injectable } from '@nestjs/common';
import { z } from 'zod';
import { AppError } from '../../../common/errors/app-error';
import { CheckoutService } from '../../checkout/checkout.service';
import { EscrowService } from '../../escrow/escrow.service';
import { PaymentsService } from '../../payments/payments.service';
import type { McpTool, McpToolContext } from '../mcp-tool';
import { requireUuid } from './ids';

/**
 * svc_get_payment_status: where a payment stands. `{paymentId}` → the agent's payment exactly as
 * GET /api/v1/payments/{id} renders it; `{checkoutSessionId}` → the checkout's status and its
 * escrow (for any credential that can read checkouts). Any credential may list the tool; reading
 * the object needs the object's read scope.
 */
@Injectable()
export class PaymentStatusTool implements McpTool<{ checkoutSessionId?: string; paymentId?: string }> {
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
      // As GET /api/v1/payments/{id}: scope first, then the credential kind; the body is the payment.
      const required = ['agent:pay', 'agent:balance:read'] as const;
      if (!required.some((s) => p.scopes.has(s))) {
        throw new AppError('missing_scope', `Reading a payment needs scope ${required.join(' or ')}`, { required: [...required], granted: p.grantedScopes });
      }
      if (p.kind !== 'agent') throw new AppError('forbidden', 'This operation needs an agent key', { reason: 'agent_key_required' });
      return this.payments.get(p, requireUuid(input.paymentId, 'payment'));
    }
    if (!input.checkoutSessionId) throw AppError.invalidParam('checkoutSessionId', 'is required');
    if (!p.scopes.has('checkout:read')) {
      throw new AppError('missing_scope', 'Reading a checkout needs scope checkout:read', { required: ['checkout:read'], granted: p.grantedScopes });
    }
    const session = await this.checkout.get(p, requireUuid(input.checkoutSessionId, 'checkout session'));
    const escrow = session.escrowId && p.scopes.has('escrow:read') ? await this.escrows.get(p, session.escrowId).catch(() => null) : null;
    return { checkoutSession: session, status: session.status, escrow };
  }
}
