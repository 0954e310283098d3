import { Injectable } from '@nestjs/common';
import { defineOperation, type Operation, type OperationSpec } from '../../kernel/operation';
import { CreatePaymentDto, PaymentListQueryDto, PaymentStatusQueryDto } from './dto/payment.dto';
import { SettleX402Dto } from './dto/x402-settle.dto';
import { PaymentsService } from './payments.service';

/** `get-payment` (GET /payments/{id}; svc_get_payment_status with `paymentId`): one payment of the agent, or (refund:read) one the organisation received. No key. */
export const GET_PAYMENT: OperationSpec = { name: 'get-payment', scopes: ['agent:pay', 'agent:balance:read', 'refund:read'], idempotency: 'none' };

/** `list-payments` (GET /payments): the agent's payments, newest first. Agent keys; no key. */
export const LIST_PAYMENTS: OperationSpec<PaymentListQueryDto> = { name: 'list-payments', scopes: ['agent:pay', 'agent:balance:read'], kinds: ['agent'], input: PaymentListQueryDto, idempotency: 'none' };

/** `get-payment-status` (svc_get_payment_status, DESIGN §15): an agent payment (`paymentId`, as {@link GET_PAYMENT}) or a checkout with its escrow (`checkoutSessionId`, as get-checkout and get-escrow). Any credential may call it; reading the object needs that read's access. No key. */
export const GET_PAYMENT_STATUS: OperationSpec<PaymentStatusQueryDto> = { name: 'get-payment-status', scopes: [], input: PaymentStatusQueryDto, idempotency: 'none' };

/**
 * `pay` (POST /payments, svc_pay; DESIGN §13, §17): an instant USDC payment from the agent's
 * session signer under its policy. Agent keys with agent:pay; row-owned idempotency (the payment
 * row is the record, DESIGN §5).
 */
export const PAY: OperationSpec<CreatePaymentDto> = { name: 'pay', scopes: ['agent:pay'], kinds: ['agent'], input: CreatePaymentDto, idempotency: 'row-owned' };

/**
 * `settle-x402` (POST /x402/settle; DESIGN §14, §17): an agent pays an x402 challenge under its
 * policy, a Payment `mode: "x402"`. Agent keys with agent:pay; row-owned (the payment is the
 * record). Input {@link SettleX402Dto}: `{paymentRequired}` or one v1 `accepts` entry. Its work is
 * the x402 transport's (X402Service.settle), which reads the amount and payee as `pay` does.
 */
export const SETTLE_X402: OperationSpec<SettleX402Dto> = { name: 'settle-x402', scopes: ['agent:pay'], kinds: ['agent'], input: SettleX402Dto, idempotency: 'row-owned' };

/** The payments module's operations with their work, for the transports that run them through the kernel's runner (MCP, A2A). */
@Injectable()
export class PaymentsOperations {
  readonly pay: Operation<CreatePaymentDto>;

  constructor(payments: PaymentsService) {
    this.pay = defineOperation(PAY, (ctx, input) => payments.payWork(ctx.principal, { to: input.to, amount: input.amount }, ctx.key));
  }
}
