import { Injectable } from '@nestjs/common';
import { z } from 'zod';
import { AppError } from '../../../common/errors/app-error';
import { CheckoutService } from '../../checkout/checkout.service';
import { EscrowService } from '../../escrow/escrow.service';
import type { McpTool, McpToolContext } from '../mcp-tool';
import { requireUuid } from './ids';

/**
 * svc_get_payment_status: where a payment stands. `{checkoutSessionId}` → the checkout's status
 * and its escrow (for any credential that can read checkouts). Any credential may list the tool;
 * reading the object needs the object's read scope.
 */
@Injectable()
export class PaymentStatusTool implements McpTool<{ checkoutSessionId?: string }> {
  readonly name = 'svc_get_payment_status';
  readonly title = 'Payment status';
  readonly description = 'Status of a checkout session (checkoutSessionId) with its escrow, if funded.';
  readonly scopes = [];
  readonly annotations = { readOnlyHint: true, idempotentHint: true };
  readonly input = z.object({ checkoutSessionId: z.string().optional() });
  constructor(
    private readonly checkout: CheckoutService,
    private readonly escrows: EscrowService,
  ) {}

  async run(ctx: McpToolContext, input: { checkoutSessionId?: string }) {
    if (!input.checkoutSessionId) {
      throw new AppError('invalid_request', 'checkoutSessionId is required', { fields: [{ param: 'checkoutSessionId', message: 'is required' }] });
    }
    const p = ctx.principal;
    if (!p.scopes.has('checkout:read')) {
      throw new AppError('missing_scope', 'Reading a checkout needs scope checkout:read', { required: ['checkout:read'], granted: p.grantedScopes });
    }
    const session = await this.checkout.get(p, requireUuid(input.checkoutSessionId, 'checkout session'));
    const escrow = session.escrowId && p.scopes.has('escrow:read') ? await this.escrows.get(p, session.escrowId).catch(() => null) : null;
    return { checkoutSession: session, status: session.status, escrow };
  }
}
