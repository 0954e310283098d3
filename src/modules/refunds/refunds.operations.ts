import { Injectable } from '@nestjs/common';
import { requireUuid } from '../../common/http/path-id';
import { AppError } from '../../common/errors/app-error';
import type { AnyIdempotentWork } from '../../kernel/idempotency/idempotency.service';
import { defineOperation, type Operation, type OperationSpec } from '../../kernel/operation';
import { CreateRefundDto, SubmitRefundDto, RefundListQueryDto } from './dto/refund.dto';
import type { RefundSourceType } from './refund.entity';
import { RefundsService } from './refunds.service';

/** `get-refund` (GET /refunds/{id}, svc_refund_get): a read. refund:read; no key. */
export const GET_REFUND: OperationSpec = { name: 'get-refund', scopes: ['refund:read'], idempotency: 'none' };

/** `list-refunds` (GET /refunds, svc_refund_list): newest first, by status. refund:read; no key. */
export const LIST_REFUNDS: OperationSpec<RefundListQueryDto> = { name: 'list-refunds', scopes: ['refund:read'], input: RefundListQueryDto, idempotency: 'none' };

/**
 * The path parameter naming each refund source (REST `/{checkout-sessions|payments|x402-settlements}/{param}/refunds`;
 * the MCP tool takes the same field), so one operation serves the three routes and the same
 * Idempotency-Key and arguments fingerprint alike on every transport (DESIGN §5, §17).
 */
export const REFUND_SOURCE_PARAMS: Record<string, RefundSourceType> = {
  checkoutSessionId: 'checkout_session',
  paymentId: 'payment',
  x402SettlementId: 'x402_settlement',
};

/**
 * `create-refund` (POST /checkout-sessions/{checkoutSessionId}/refunds, /payments/{paymentId}/refunds,
 * /x402-settlements/{x402SettlementId}/refunds; svc_refund_create; DESIGN §21): refund:write,
 * Idempotency-Key required. Work: {@link RefundsService.createWork}.
 */
export const CREATE_REFUND: OperationSpec<CreateRefundDto> = { name: 'create-refund', scopes: ['refund:write'], input: CreateRefundDto, idempotency: 'required' };

/** `submit-refund` (POST /refunds/{id}/submit, svc_refund_submit): refund:write, Idempotency-Key required. Work: {@link RefundsService.submitWork}. */
export const SUBMIT_REFUND: OperationSpec<SubmitRefundDto> = { name: 'submit-refund', scopes: ['refund:write'], input: SubmitRefundDto, idempotency: 'required' };

/** `cancel-refund` (POST /refunds/{id}/cancel, svc_refund_cancel): refund:write, Idempotency-Key optional. Work: {@link RefundsService.cancelWork}. */
export const CANCEL_REFUND: OperationSpec<Record<string, never>> = { name: 'cancel-refund', scopes: ['refund:write'], idempotency: 'optional' };

/**
 * The refund source named by the call's parameters (exactly one of {@link REFUND_SOURCE_PARAMS}).
 * @throws AppError 400 invalid_request when none or several are given; 404 when the id is not a UUID.
 */
export function refundSource(params: Record<string, string>): { type: RefundSourceType; id: string } {
  const given = Object.keys(REFUND_SOURCE_PARAMS).filter((k) => params[k] !== undefined);
  if (given.length !== 1) {
    throw new AppError('invalid_request', `Name exactly one source: ${Object.keys(REFUND_SOURCE_PARAMS).join(', ')}`, {
      fields: [{ param: 'checkoutSessionId', message: 'or paymentId or x402SettlementId is required (exactly one)' }],
    });
  }
  const type = REFUND_SOURCE_PARAMS[given[0]];
  return { type, id: requireUuid(params[given[0]], type === 'checkout_session' ? 'checkout session' : type === 'payment' ? 'payment' : 'x402 settlement') };
}

/** The refunds module's operations with their work (DESIGN §17: declared once; REST states them with `@Runs`, MCP tools name them). */
@Injectable()
export class RefundsOperations {
  readonly create: Operation<CreateRefundDto>;
  readonly submit: Operation<SubmitRefundDto>;
  readonly cancel: Operation<Record<string, never>>;

  constructor(refunds: RefundsService) {
    this.create = defineOperation(CREATE_REFUND, (ctx, input) => {
      const source = refundSource(ctx.params);
      return refunds.createWork(ctx.principal, source.type, source.id, input) as AnyIdempotentWork;
    });
    this.submit = defineOperation(SUBMIT_REFUND, (ctx, input) => refunds.submitWork(ctx.principal, requireUuid(ctx.params.id, 'refund'), input) as AnyIdempotentWork);
    this.cancel = defineOperation(CANCEL_REFUND, (ctx) => refunds.cancelWork(ctx.principal, requireUuid(ctx.params.id, 'refund')) as AnyIdempotentWork);
  }
}
