import { Injectable } from '@nestjs/common';
import { defineOperation, type Operation, type OperationSpec } from '../../kernel/operation';
import { CreatePaymentDto } from './dto/payment.dto';
import { PaymentsService } from './payments.service';

/**
 * `pay` (POST /payments, svc_pay; DESIGN §13, §17): an instant USDC payment from the agent's
 * session signer under its policy. Agent keys with agent:pay; row-owned idempotency (the payment
 * row is the record, DESIGN §5).
 */
export const PAY: OperationSpec<CreatePaymentDto> = { name: 'pay', scopes: ['agent:pay'], kinds: ['agent'], input: CreatePaymentDto, idempotency: 'row-owned' };

/** The payments module's operations with their work, for the transports that run them through the kernel's runner (MCP, A2A). */
@Injectable()
export class PaymentsOperations {
  readonly pay: Operation<CreatePaymentDto>;

  constructor(payments: PaymentsService) {
    this.pay = defineOperation(PAY, (ctx, input) => payments.payWork(ctx.principal, { to: input.to, amount: input.amount }, ctx.key));
  }
}
