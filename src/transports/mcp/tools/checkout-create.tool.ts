import { Injectable } from '@nestjs/common';
import { z } from 'zod';
import type { Operation } from '../../../kernel/operation';
import { CheckoutOperations } from '../../../modules/checkout/checkout.operations';
import type { CreateCheckoutSessionDto } from '../../../modules/checkout/dto/create-checkout-session.dto';
import type { McpTool } from '../mcp-tool';
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

/** svc_checkout_create: the operation `create-checkout` of POST /api/v1/checkout-sessions (declared once in checkout.operations.ts). */
@Injectable()
export class CheckoutCreateTool implements McpTool<CreateCheckoutSessionDto> {
  readonly name: string = 'svc_checkout_create';
  readonly title = 'Create a checkout session';
  readonly description = 'Creates an escrow-settled USDC checkout session; the buyer pays at its payUrl.';
  readonly annotations = { readOnlyHint: false, destructiveHint: false, idempotentHint: true };
  readonly input = checkoutCreateInput;
  readonly operation: Operation<CreateCheckoutSessionDto>;
  constructor(ops: CheckoutOperations) {
    this.operation = ops.create;
  }
}

/** svc_create_checkout: the agent-facing alias of svc_checkout_create (docs/api.md, Tool interface): the same operation, so the same key scope. */
@Injectable()
export class CreateCheckoutTool extends CheckoutCreateTool {
  override readonly name = 'svc_create_checkout';
}
