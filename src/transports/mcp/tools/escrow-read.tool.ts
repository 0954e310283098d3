import { Injectable } from '@nestjs/common';
import { EscrowListQueryDto } from '../../../modules/escrow/dto/escrow.dto';
import { EscrowService } from '../../../modules/escrow/escrow.service';
import type { ServiceTool, McpToolContext } from '../mcp-tool';
import { idParams, requireUuid } from './ids';
import { GET_ESCROW, LIST_ESCROWS } from '../../../modules/escrow/escrow.operations';

/** svc_escrow_list: GET /api/v1/escrows. */
@Injectable()
export class EscrowListTool implements ServiceTool<EscrowListQueryDto & Record<string, unknown>> {
  readonly name = 'svc_escrow_list';
  readonly title = 'List escrows';
  readonly description = 'Escrows your organisation is buyer or seller of, newest first.';
  readonly annotations = { readOnlyHint: true, idempotentHint: true };
  readonly declaration = LIST_ESCROWS;
  constructor(private readonly escrows: EscrowService) {}
  run(ctx: McpToolContext, q: EscrowListQueryDto) {
    return this.escrows.list(ctx.principal, { limit: q.limit, startingAfter: q.starting_after, role: q.role, status: q.status });
  }
}

/** svc_escrow_get: GET /api/v1/escrows/{id}. */
@Injectable()
export class EscrowGetTool implements ServiceTool<{ id: string }> {
  readonly name = 'svc_escrow_get';
  readonly title = 'Get an escrow';
  readonly description = 'One escrow with its on-chain transactions.';
  readonly annotations = { readOnlyHint: true, idempotentHint: true };
  readonly declaration = GET_ESCROW;
  readonly params = idParams('escrow');
  constructor(private readonly escrows: EscrowService) {}
  run(ctx: McpToolContext, input: { id: string }) {
    return this.escrows.get(ctx.principal, requireUuid(input.id, 'escrow'));
  }
}
