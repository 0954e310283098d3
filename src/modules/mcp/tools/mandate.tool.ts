import { Injectable } from '@nestjs/common';
import { z } from 'zod';
import { MandatesService } from '../../mandates/mandates.service';
import type { McpTool, McpToolContext } from '../mcp-tool';

/** svc_list_mandates: GET /api/v1/mandates — the agent's AP2 intent mandates with usedAmount and status (docs/architecture.md §14, §15). */
@Injectable()
export class ListMandatesTool implements McpTool<{ limit?: number; starting_after?: string }> {
  readonly name = 'svc_list_mandates';
  readonly title = 'List mandates';
  readonly description = 'The intent mandates the agent’s owner signed (payees, per-payment maximum, total, used amount, expiry, status), newest first.';
  readonly scopes = ['agent:mandate'] as const;
  readonly credentialKind = 'agent' as const;
  readonly annotations = { readOnlyHint: true, idempotentHint: true };
  readonly input = z.object({
    limit: z.number().int().min(1).max(100).optional(),
    starting_after: z.string().uuid().optional(),
  });
  constructor(private readonly mandates: MandatesService) {}
  run(ctx: McpToolContext, args: { limit?: number; starting_after?: string }) {
    return this.mandates.list(ctx.principal, { limit: args.limit, startingAfter: args.starting_after });
  }
}
