import { Injectable } from '@nestjs/common';
import { z } from 'zod';
import { IdempotentSteps } from '../../../kernel/idempotency/idempotent.decorator';
import { CheckoutService } from '../../../modules/checkout/checkout.service';
import { CreateCheckoutSessionDto } from '../../../modules/checkout/dto/create-checkout-session.dto';
import type { ServiceTool, McpToolContext } from '../mcp-tool';
import { idempotencyKey } from './ids';

/** The body of POST /api/v1/checkout-sessions (docs/api.md). */
export const checkoutCreateInput = z.object({
  amount: z.string().describe('USDC as decimal text, e.g. "25.00"'),
  description: z.string(),
  redirectUrl: z.string().optional(),
  webhookUrl: z.string().optional(),
  orderId: z.string().optional(),
  shopDomain: z.string().optional(),
  escrowTemplateId: z.enum(['freelance', 'physical', 'digital', 'custom']).optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
  expiresAt: z.string().optional().describe('ISO-8601, 30 min to 24 h from now'),
  idempotencyKey: idempotencyKey(false),
});

/** svc_checkout_create: POST /api/v1/checkout-sessions. */
@Injectable()
export class CheckoutCreateTool implements ServiceTool {
  readonly name: string = 'svc_checkout_create';
  readonly title = 'Create a checkout session';
  readonly description = 'Creates an escrow-settled USDC checkout session; the buyer pays at its payUrl.';
  readonly scopes = ['checkout:write'] as const;
  readonly annotations = { readOnlyHint: false, destructiveHint: false, idempotentHint: true };
  readonly input = checkoutCreateInput;
  readonly dto = CreateCheckoutSessionDto;
  readonly idempotency = 'optional' as const;
  readonly steps = true;
  constructor(private readonly checkout: CheckoutService) {}
  /** As its REST twin: the webhookUrl DNS check (when there is one) first, then the insert. */
  async run(ctx: McpToolContext, input: Record<string, unknown>) {
    const { session, resolveWebhookUrl } = await this.checkout.draft(ctx.principal, input as unknown as CreateCheckoutSessionDto);
    return new IdempotentSteps(() => this.checkout.insert(session), resolveWebhookUrl);
  }
}

/** svc_create_checkout: the agent-facing alias of svc_checkout_create (docs/api.md, Tool interface). */
@Injectable()
export class CreateCheckoutTool extends CheckoutCreateTool {
  override readonly name = 'svc_create_checkout';
}
