import { Injectable } from '@nestjs/common';
import { CheckoutService } from '../../../modules/checkout/checkout.service';
import type { ServiceTool, McpToolContext } from '../mcp-tool';
import { idParams, requireUuid } from './ids';
import { GET_CHECKOUT } from '../../../modules/checkout/checkout.operations';

/** svc_checkout_get: GET /api/v1/checkout-sessions/{id}. */
@Injectable()
export class CheckoutGetTool implements ServiceTool<{ id: string }> {
  readonly name = 'svc_checkout_get';
  readonly title = 'Get a checkout session';
  readonly description = 'One checkout session of your organisation, with its status.';
  readonly annotations = { readOnlyHint: true, idempotentHint: true };
  readonly declaration = GET_CHECKOUT;
  readonly params = idParams('checkout session');
  constructor(private readonly checkout: CheckoutService) {}
  run(ctx: McpToolContext, input: { id: string }) {
    return this.checkout.get(ctx.principal, requireUuid(input.id, 'checkout session'));
  }
}
