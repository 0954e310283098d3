import { Injectable } from '@nestjs/common';
import type { Operation } from '../../../kernel/operation';
import { CheckoutOperations } from '../../../modules/checkout/checkout.operations';
import type { CreateCheckoutSessionDto } from '../../../modules/checkout/dto/create-checkout-session.dto';
import type { McpTool } from '../mcp-tool';

/** svc_checkout_create: the operation `create-checkout` of POST /api/v1/checkout-sessions (declared once in checkout.operations.ts). */
@Injectable()
export class CheckoutCreateTool implements McpTool<CreateCheckoutSessionDto> {
  readonly name: string = 'svc_checkout_create';
  readonly title = 'Create a checkout session';
  readonly description = 'Creates an escrow-settled USDC checkout session; the buyer pays at its payUrl.';
  readonly annotations = { readOnlyHint: false, destructiveHint: false, idempotentHint: true };
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
