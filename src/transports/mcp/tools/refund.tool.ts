import { Injectable } from '@nestjs/common';
import type { Operation } from '../../../kernel/operation';
import { RefundListQueryDto, type CreateRefundDto, type SubmitRefundDto } from '../../../modules/refunds/dto/refund.dto';
import { GET_REFUND, LIST_REFUNDS, RefundsOperations } from '../../../modules/refunds/refunds.operations';
import { RefundsService } from '../../../modules/refunds/refunds.service';
import type { McpTool, McpToolContext, ServiceTool } from '../mcp-tool';
import { idParams, requireUuid } from './ids';

/**
 * svc_refund_create: the operation `create-refund` of POST /api/v1/{checkout-sessions|payments|x402-settlements}/{id}/refunds
 * (declared once in refunds.operations.ts, DESIGN §21). Exactly one of the source ids, named as REST's
 * path parameter, so the same Idempotency-Key and arguments are one refund on both transports.
 */
@Injectable()
export class RefundCreateTool implements McpTool<CreateRefundDto> {
  readonly name = 'svc_refund_create';
  readonly title = 'Refund money this organisation received';
  readonly description =
    'Creates a refund (requires_signature) of a released checkout, a received agent payment or x402 settlement; then sign its typedData with the receiving wallet and call svc_refund_submit.';
  readonly annotations = { readOnlyHint: false, destructiveHint: false, idempotentHint: true };
  readonly params = {
    checkoutSessionId: { description: 'The released checkout session id', optional: true },
    paymentId: { description: 'The received payment id', optional: true },
    x402SettlementId: { description: 'The received x402 settlement id', optional: true },
  } as const;
  readonly operation: Operation<CreateRefundDto>;
  constructor(ops: RefundsOperations) {
    this.operation = ops.create;
  }
}

/** svc_refund_submit: the operation `submit-refund` of POST /api/v1/refunds/{id}/submit. */
@Injectable()
export class RefundSubmitTool implements McpTool<SubmitRefundDto> {
  readonly name = 'svc_refund_submit';
  readonly title = 'Submit a refund';
  readonly description = "Either the receiving wallet's signature of the refund's typedData (relayed gaslessly) or the txHash of a USDC transfer you sent yourself.";
  readonly annotations = { readOnlyHint: false, destructiveHint: true, idempotentHint: true };
  readonly params = idParams('refund');
  readonly operation: Operation<SubmitRefundDto>;
  constructor(ops: RefundsOperations) {
    this.operation = ops.submit;
  }
}

/** svc_refund_cancel: the operation `cancel-refund` of POST /api/v1/refunds/{id}/cancel. */
@Injectable()
export class RefundCancelTool implements McpTool<Record<string, never>> {
  readonly name = 'svc_refund_cancel';
  readonly title = 'Cancel a refund';
  readonly description = 'Cancels a refund while it requires a signature (409 otherwise).';
  readonly annotations = { readOnlyHint: false, destructiveHint: false, idempotentHint: true };
  readonly params = idParams('refund');
  readonly operation: Operation<Record<string, never>>;
  constructor(ops: RefundsOperations) {
    this.operation = ops.cancel;
  }
}

/** svc_refund_get: GET /api/v1/refunds/{id}. */
@Injectable()
export class RefundGetTool implements ServiceTool<{ id: string }> {
  readonly name = 'svc_refund_get';
  readonly title = 'Get a refund';
  readonly description = 'One refund with its status, typedData and transfer.';
  readonly annotations = { readOnlyHint: true, idempotentHint: true };
  readonly declaration = GET_REFUND;
  readonly params = idParams('refund');
  constructor(private readonly refunds: RefundsService) {}
  run(ctx: McpToolContext, input: { id: string }) {
    return this.refunds.get(ctx.principal, requireUuid(input.id, 'refund'));
  }
}

/** svc_refund_list: GET /api/v1/refunds. */
@Injectable()
export class RefundListTool implements ServiceTool<RefundListQueryDto & Record<string, unknown>> {
  readonly name = 'svc_refund_list';
  readonly title = 'List refunds';
  readonly description = "The organisation's refunds, newest first.";
  readonly annotations = { readOnlyHint: true, idempotentHint: true };
  readonly declaration = LIST_REFUNDS;
  constructor(private readonly refunds: RefundsService) {}
  run(ctx: McpToolContext, q: RefundListQueryDto) {
    return this.refunds.list(ctx.principal, { limit: q.limit, startingAfter: q.starting_after, status: q.status });
  }
}
