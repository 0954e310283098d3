import { Injectable } from '@nestjs/common';
import type { Operation } from '../../../kernel/operation';
import { EscrowOperations } from '../../../modules/escrow/escrow.operations';
import type { EscrowActionInput } from '../../../modules/escrow/escrow.service';
import type { EscrowApiAction } from '../../../modules/escrow/escrow.state';
import type { McpTool, McpToolAnnotations } from '../mcp-tool';
import { idParams } from './ids';

/**
 * The escrow party actions: each tool runs the operation of POST /api/v1/escrows/{id}/<action>
 * (declared once in escrow.operations.ts): the caller signs and sends the contract call first and
 * reports its txHash, which is verified on chain (docs/architecture.md §7). `id` is the path
 * parameter. One class per action, sharing this base.
 */
@Injectable()
abstract class EscrowActionTool implements McpTool<EscrowActionInput> {
  abstract readonly action: EscrowApiAction;
  abstract readonly name: string;
  abstract readonly title: string;
  abstract readonly description: string;
  readonly params = idParams('escrow');
  constructor(private readonly ops: EscrowOperations) {}
  get operation(): Operation<EscrowActionInput> {
    return this.ops.act[this.action];
  }
  get annotations(): McpToolAnnotations {
    return { readOnlyHint: false, destructiveHint: ['release', 'dispute', 'cancel', 'decline'].includes(this.action), idempotentHint: true };
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
