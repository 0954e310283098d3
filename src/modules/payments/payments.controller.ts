import { Body, Controller, Get, Headers, HttpCode, Param, ParseUUIDPipe, Post, Query } from '@nestjs/common';
import { ApiBadRequestResponse, ApiForbiddenResponse, ApiOkResponse, ApiOperation, ApiTags, ApiUnprocessableEntityResponse } from '@nestjs/swagger';
import { CurrentPrincipal } from '../../kernel/auth/auth.decorators';
import type { Principal } from '../../kernel/auth/principal';
import { AppError } from '../../common/errors/app-error';
import { ErrorBody } from '../../common/errors/error-body';
import { Runs } from '../../kernel/http';
import { ApiStandardErrors } from '../../common/http/api-errors.decorator';
import { CreatePaymentDto, PaymentDto, PaymentListDto, PaymentListQueryDto } from './dto/payment.dto';
import type { PaymentStatus } from './payment.entity';
import { GET_PAYMENT, LIST_PAYMENTS, PAY } from './payments.operations';
import { PaymentsService } from './payments.service';

const paymentId = new ParseUUIDPipe({ exceptionFactory: () => AppError.notFound('payment') });

/** Refusals of every agent spend, in the order they are checked (docs/architecture.md §13). */
export const SPEND_REFUSALS =
  'In this order: agents_disabled (AGENTS_ENABLED=false), agent_paused, signer_required, kyb_rejected, mandate_required, ' +
  'policy_denied with details.rule (not_yet_valid, expired, recipient_not_allowed, per_transaction_limit, daily_limit, monthly_limit, approval_required, insufficient_balance) and details.limit/used/requested. ' +
  'Before those: missing_scope (details.required) and forbidden (not an agent key).';

@ApiTags('agents')
@Controller('api/v1/payments')
export class PaymentsController {
  constructor(private readonly payments: PaymentsService) {}

  @Post()
  @HttpCode(200)
  @Runs(PAY)
  @ApiOperation({
    summary: 'Pay a merchant handle or agent slug in USDC under the agent policy',
    description:
      'Reserves the amount under the agent row lock, then the session signer signs one EIP-3009 transferWithAuthorization and the relayer broadcasts it. ' +
      'Answers once broadcast (status submitted; pending if the relayer could not broadcast yet). succeeded when the authorization is used on chain.',
  })
  @ApiOkResponse({ type: PaymentDto })
  @ApiBadRequestResponse({ description: 'idempotency_required; invalid_request (amount 0, negative, > 6 decimals, > MAX_AMOUNT; unknown payee; no payout address)', type: ErrorBody })
  @ApiForbiddenResponse({ description: SPEND_REFUSALS, type: ErrorBody })
  @ApiUnprocessableEntityResponse({ description: 'idempotency_conflict: this key was used for a different payment', type: ErrorBody })
  @ApiStandardErrors()
  create(@CurrentPrincipal() p: Principal, @Body() body: CreatePaymentDto, @Headers('idempotency-key') key?: string) {
    return this.payments.payWork(p, { to: body.to, amount: body.amount }, key);
  }

  @Get()
  @Runs(LIST_PAYMENTS)
  @ApiOperation({ summary: "The agent's payments, newest first (extension)" })
  @ApiOkResponse({ type: PaymentListDto })
  @ApiStandardErrors()
  list(@CurrentPrincipal() p: Principal, @Query() q: PaymentListQueryDto) {
    return this.payments.list(p, { limit: q.limit, startingAfter: q.starting_after, status: q.status as PaymentStatus | undefined });
  }

  @Get(':id')
  @Runs(GET_PAYMENT)
  @ApiOperation({ summary: 'One payment of the agent, or (read-only, refund:read) one this organisation received (extension)' })
  @ApiOkResponse({ type: PaymentDto })
  @ApiStandardErrors({ notFound: true })
  get(@CurrentPrincipal() p: Principal, @Param('id', paymentId) id: string): Promise<PaymentDto> {
    return this.payments.get(p, id);
  }
}
