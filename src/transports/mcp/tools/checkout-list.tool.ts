import { Injectable } from '@nestjs/common';
import { ListQueryDto } from '../../../common/http/list.dto';
import { CheckoutService } from '../../../modules/checkout/checkout.service';
import type { ServiceTool, McpToolContext } from '../mcp-tool';
import { LIST_CHECKOUTS } from '../../../modules/checkout/checkout.operations';

/** svc_checkout_list: GET /api/v1/checkout-sessions. */
@Injectable()
export class CheckoutListTool implements ServiceTool<ListQueryDto & Record<string, unknown>> {
  readonly name = 'svc_checkout_list';
  readonly title = 'List checkout sessions';
  readonly description = 'Checkout sessions of your organisation, newest first, with cursor pagination.';
  readonly annotations = { readOnlyHint: true, idempotentHint: true };
  readonly declaration = LIST_CHECKOUTS;
  constructor(private readonly checkout: CheckoutService) {}
  run(ctx: McpToolContext, input: ListQueryDto) {
    return this.checkout.list(ctx.principal, input.limit, input.starting_after);
  }
}
