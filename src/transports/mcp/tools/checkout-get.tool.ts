import { Injectable } from '@nestjs/common';
import { z } from 'zod';
import { CheckoutService } from '../../../modules/checkout/checkout.service';
import type { ServiceTool, McpToolContext } from '../mcp-tool';
import { idParam, requireUuid } from './ids';

/** svc_checkout_get: GET /api/v1/checkout-sessions/{id}. */
@Injectable()
export class CheckoutGetTool implements ServiceTool<{ id: string }> {
  readonly name = 'svc_checkout_get';
  readonly title = 'Get a checkout session';
  readonly description = 'One checkout session of your organisation, with its status.';
  readonly scopes = ['checkout:read'] as const;
  readonly annotations = { readOnlyHint: true, idempotentHint: true };
  readonly input = z.object({ id: idParam('checkout session') });
  constructor(private readonly checkout: CheckoutService) {}
  run(ctx: McpToolContext, input: { id: string }) {
    return this.checkout.get(ctx.principal, requireUuid(input.id, 'checkout session'));
  }
}
