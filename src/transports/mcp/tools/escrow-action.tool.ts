import { Injectable } from '@nestjs/common';
import { z } from 'zod';
import { ConfirmedEscrowActionDto, EscrowActionDto } from '../../../modules/escrow/dto/escrow.dto';
import { ESCROW_ACTIONS, EscrowApiAction } from '../../../modules/escrow/escrow.state';
import { IdempotentSteps } from '../../../kernel/idempotency/idempotent.decorator';
import { EscrowService, PreparedEscrowAction } from '../../../modules/escrow/escrow.service';
import type { ServiceTool, McpToolAnnotations, McpToolContext } from '../mcp-tool';
import { idempotencyKey, idParam, requireUuid } from './ids';

type ActionInput = { id: string; txHash: string; confirm?: boolean };

/**
 * The escrow party actions (POST /api/v1/escrows/{id}/<action>): the caller signs and sends the
 * contract call first and reports its txHash, which is verified on chain (docs/architecture.md §7).
 * One class per action, sharing this base.
 */
@Injectable()
abstract class EscrowActionTool implements ServiceTool<ActionInput> {
  abstract readonly action: EscrowApiAction;
  abstract readonly name: string;
  abstract readonly title: string;
  abstract readonly description: string;
  readonly scopes = ['escrow:write'] as const;
  readonly params = ['id'] as const;
  constructor(private readonly escrows: EscrowService) {}
  get rule() {
    return ESCROW_ACTIONS[this.action];
  }
  get annotations(): McpToolAnnotations {
    return { readOnlyHint: false, destructiveHint: ['release', 'dispute', 'cancel', 'decline'].includes(this.action), idempotentHint: true };
  }
  get idempotency() {
    return this.rule.idempotencyRequired ? ('required' as const) : ('optional' as const);
  }
  get dto() {
    return this.rule.confirm ? ConfirmedEscrowActionDto : EscrowActionDto;
  }
  get input() {
    return z.object({
      id: idParam('escrow'),
      txHash: z.string().describe('Hash of the transaction you sent to the escrow contract'),
      ...(this.rule.confirm ? { confirm: z.boolean().optional().describe('Must be true: this moves or locks money') } : {}),
      idempotencyKey: idempotencyKey(this.rule.idempotencyRequired),
    });
  }
  readonly steps = true;
  /** As its REST twin: the checks and the chain verification first, then the locked transaction applies it. */
  async run(ctx: McpToolContext, input: ActionInput) {
    const id = requireUuid(input.id, 'escrow');
    return new IdempotentSteps<PreparedEscrowAction, unknown>(
      (prepared) => this.escrows.applyAction(ctx.principal, id, this.action, input, prepared),
      () => this.escrows.prepareAction(ctx.principal, id, this.action, input),
    );
  }
}

@Injectable()
export class EscrowAcceptTool extends EscrowActionTool {
  readonly action = 'accept';
  readonly name = 'svc_escrow_accept';
  readonly title = 'Accept an escrow (seller)';
  readonly description = 'Report the seller’s accept transaction for a funded escrow.';
}
@Injectable()
export class EscrowDeclineTool extends EscrowActionTool {
  readonly action = 'decline';
  readonly name = 'svc_escrow_decline';
  readonly title = 'Decline an escrow (seller; refunds the buyer)';
  readonly description = 'Report the seller’s decline transaction; the buyer is refunded.';
}
@Injectable()
export class EscrowMarkDeliveredTool extends EscrowActionTool {
  readonly action = 'mark-delivered';
  readonly name = 'svc_escrow_mark_delivered';
  readonly title = 'Mark an escrow delivered (seller)';
  readonly description = 'Report the seller’s mark-delivered transaction; the inspection window starts.';
}
@Injectable()
export class EscrowReleaseTool extends EscrowActionTool {
  readonly action = 'release';
  readonly name = 'svc_escrow_release';
  readonly title = 'Release an escrow (buyer; pays the seller)';
  readonly description = 'Report the buyer’s release transaction; needs confirm: true and idempotencyKey.';
}
@Injectable()
export class EscrowCancelTool extends EscrowActionTool {
  readonly action = 'cancel';
  readonly name = 'svc_escrow_cancel';
  readonly title = 'Cancel an escrow (buyer; refunds the buyer)';
  readonly description = 'Report the buyer’s cancel transaction for a funded escrow.';
}
@Injectable()
export class EscrowDisputeTool extends EscrowActionTool {
  readonly action = 'dispute';
  readonly name = 'svc_escrow_dispute';
  readonly title = 'Dispute an escrow (buyer or seller)';
  readonly description = 'Report a party’s dispute transaction; funds stay locked until resolved. Needs confirm: true and idempotencyKey.';
}
