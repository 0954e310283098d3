import { Injectable } from '@nestjs/common';
import { z } from 'zod';
import type { Operation } from '../../../kernel/operation';
import { RefundListQueryDto, type CreateRefundDto, type SubmitRefundDto } from '../../../modules/refunds/dto/refund.dto';
import { REFUND_STATUSES } from '../../../modules/refunds/refund.entity';
import { RefundsOperations } from '../../../modules/refunds/refunds.operations';
import { RefundsService } from '../../../modules/refunds/refunds.service';
import type { McpTool, McpToolContext, ServiceTool } from '../mcp-tool';
import { idempotencyKey, idParam, listShape, requireUuid } from './ids';

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
  readonly params = ['checkoutSessionId', 'paymentId', 'x402SettlementId'] as const;
  readonly input = z.object({
    checkoutSessionId: idParam('released checkout session').optional(),
    paymentId: idParam('received payment').optional(),
    x402SettlementId: idParam('received x402 settlement').optional(),
    amount: z.string().describe('USDC as decimal text, e.g. "5.00"'),
    reason: z.string().optional(),
    metadata: z.record(z.string(), z.unknown()).optional(),
    idempotencyKey: idempotencyKey(true),
  });
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
  readonly params = ['id'] as const;
  readonly input = z.object({ id: idParam('refund'), signature: z.string().optional(), txHash: z.string().optional(), idempotencyKey: idempotencyKey(true) });
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
  readonly params = ['id'] as const;
  readonly input = z.object({ id: idParam('refund'), idempotencyKey: idempotencyKey(false) });
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
  readonly scopes = ['refund:read'] as const;
  readonly annotations = { readOnlyHint: true, idempotentHint: true };
  readonly input = z.object({ id: idParam('refund') });
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
  readonly scopes = ['refund:read'] as const;
  readonly annotations = { readOnlyHint: true, idempotentHint: true };
  readonly input = z.object({ ...listShape, status: z.enum(REFUND_STATUSES).optional() });
  readonly dto = RefundListQueryDto;
  constructor(private readonly refunds: RefundsService) {}
  run(ctx: McpToolContext, q: RefundListQueryDto) {
    return this.refunds.list(ctx.principal, { limit: q.limit, startingAfter: q.starting_after, status: q.status });
  }
}
