import { Injectable } from '@nestjs/common';
import { defineOperation, type Operation, type OperationSpec } from '../../kernel/operation';
import { CheckoutOperations } from '../../modules/checkout/checkout.operations';
import { CreateCheckoutSessionDto } from '../../modules/checkout/dto/create-checkout-session.dto';
import { A2aPaymentsService } from './a2a-payments.service';
import { PaymentSubmittedParamsDto } from './dto/a2a.dto';

/**
 * `submit-a2a-payment` (POST /api/v1/a2a/payment-submitted and the JSON-RPC `pay` skill; DESIGN
 * §14, §17): a Payment `mode: "a2a"`, one per agent and task. Agent keys with agent:pay;
 * row-owned (the payment is the record).
 */
export const SUBMIT_A2A_PAYMENT: OperationSpec<PaymentSubmittedParamsDto> = {
  name: 'submit-a2a-payment',
  scopes: ['agent:pay'],
  kinds: ['agent'],
  input: PaymentSubmittedParamsDto,
  idempotency: 'row-owned',
};

/**
 * The JSON-RPC pay skill's declaration: {@link SUBMIT_A2A_PAYMENT} itself, its input the same DTO
 * (`{to, amount, taskId}`, issue 31), validated by the runner; the executor has already read the
 * terms (PaymentsService.payTerms) when it asked for payment.
 */
const PAY_SKILL: OperationSpec<PaymentSubmittedParamsDto> = SUBMIT_A2A_PAYMENT;

/**
 * The A2A skills as operations for the kernel's runner (DESIGN §17): the executor maps a message to
 * one of these and its result to task states; access, validation and idempotency are the runner's.
 */
@Injectable()
export class A2aOperations {
  /**
   * The pay skill's payment: {@link SUBMIT_A2A_PAYMENT} run with the task id as its idempotency key
   * (A2A's own retry identity); the payment stores the task id, no invented Idempotency-Key.
   */
  readonly pay: Operation<PaymentSubmittedParamsDto>;
  /** `create-checkout`: the checkout module's operation of POST /checkout-sessions, run as a skill (checkout.operations.ts). */
  readonly createCheckout: Operation<CreateCheckoutSessionDto>;

  constructor(payments: A2aPaymentsService, checkout: CheckoutOperations) {
    this.pay = defineOperation(PAY_SKILL, (ctx, input) => payments.payWork(ctx.principal, { to: input.to, amount: input.amount }, undefined, input.taskId ?? null));
    this.createCheckout = checkout.create;
  }
}
