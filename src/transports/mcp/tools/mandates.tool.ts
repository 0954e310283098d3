import { Injectable } from '@nestjs/common';
import { ListQueryDto } from '../../../common/http/list.dto';
import { MandatesService } from '../../../modules/mandates/mandates.service';
import type { ServiceTool, McpToolContext } from '../mcp-tool';
import { LIST_MANDATES } from '../../../modules/mandates/mandates.operations';

/**
 * svc_list_mandates: GET /api/v1/mandates (docs/architecture.md §15) — the agent's AP2 intent
 * mandates, newest first, with usedAmount (USDC base units) and status computed, exactly as REST.
 */
@Injectable()
export class ListMandatesTool implements ServiceTool<ListQueryDto & Record<string, unknown>> {
  readonly name = 'svc_list_mandates';
  readonly title = 'Mandates';
  readonly description = 'The AP2 intent mandates of this agent: payees, per-payment max, budget and used amount (USDC base units), expiry and status.';
  readonly annotations = { readOnlyHint: true, idempotentHint: true };
  readonly declaration = LIST_MANDATES;
  constructor(private readonly mandates: MandatesService) {}

  run(ctx: McpToolContext, input: ListQueryDto) {
    return this.mandates.list(ctx.principal, { limit: input.limit, startingAfter: input.starting_after });
  }
}
