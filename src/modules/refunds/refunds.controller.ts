import { Body, Controller, Get, HttpCode, Param, ParseUUIDPipe, Post, Query } from '@nestjs/common';
import { ApiConflictResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentPrincipal } from '../../kernel/auth/auth.decorators';
import type { Principal } from '../../kernel/auth/principal';
import { AppError } from '../../common/errors/app-error';
import { ErrorBody } from '../../common/errors/error-body';
import { ApiStandardErrors } from '../../common/http/api-errors.decorator';
import { Runs } from '../../kernel/http';
import { CreateRefundDto, RefundDto, RefundListDto, RefundListQueryDto, SubmitRefundDto } from './dto/refund.dto';
import { CANCEL_REFUND, CREATE_REFUND, GET_REFUND, LIST_REFUNDS, RefundsOperations, SUBMIT_REFUND } from './refunds.operations';
import { RefundsService } from './refunds.service';

const uuid = (what: string) => new ParseUUIDPipe({ exceptionFactory: () => AppError.notFound(what) });
const CREATE_DOCS =
  'Creates a refund `requires_signature` for money this organisation received: the active refunds (requires_signature, pending, succeeded) never exceed the amount received. ' +
  'Then submit it with the receiving wallet\'s signature of `typedData` (relayed gaslessly) or the txHash of a USDC transfer you sent yourself.';
const BOUND = { description: 'refund_exceeds_amount (more than is left to refund) or not_refundable (the money was not received, or is no longer)', type: ErrorBody };

/** REST adapter of refunds (DESIGN §21): each route runs its declared operation (refunds.operations.ts) or a plain read. */
@ApiTags('refunds')
@Controller('api/v1')
@ApiStandardErrors({ notFound: true })
export class RefundsController {
  constructor(
    private readonly ops: RefundsOperations,
    private readonly refunds: RefundsService,
  ) {}

  @Post('checkout-sessions/:checkoutSessionId/refunds')
  @HttpCode(200)
  @Runs(CREATE_REFUND)
  @ApiOperation({ summary: 'Refund a released checkout (all or part; several times)', description: CREATE_DOCS })
  @ApiOkResponse({ type: RefundDto })
  @ApiConflictResponse(BOUND)
  refundCheckout(@CurrentPrincipal() p: Principal, @Param('checkoutSessionId', uuid('checkout session')) checkoutSessionId: string, @Body() body: CreateRefundDto) {
    return this.ops.create.work({ principal: p, params: { checkoutSessionId } }, body);
  }

  @Post('payments/:paymentId/refunds')
  @HttpCode(200)
  @Runs(CREATE_REFUND)
  @ApiOperation({ summary: 'Refund an agent payment this organisation received', description: CREATE_DOCS })
  @ApiOkResponse({ type: RefundDto })
  @ApiConflictResponse(BOUND)
  refundPayment(@CurrentPrincipal() p: Principal, @Param('paymentId', uuid('payment')) paymentId: string, @Body() body: CreateRefundDto) {
    return this.ops.create.work({ principal: p, params: { paymentId } }, body);
  }

  @Post('x402-settlements/:x402SettlementId/refunds')
  @HttpCode(200)
  @Runs(CREATE_REFUND)
  @ApiOperation({ summary: 'Refund an x402 settlement this organisation received as a resource server', description: CREATE_DOCS })
  @ApiOkResponse({ type: RefundDto })
  @ApiConflictResponse(BOUND)
  refundX402(@CurrentPrincipal() p: Principal, @Param('x402SettlementId', uuid('x402 settlement')) x402SettlementId: string, @Body() body: CreateRefundDto) {
    return this.ops.create.work({ principal: p, params: { x402SettlementId } }, body);
  }

  @Get('refunds')
  @Runs(LIST_REFUNDS)
  @ApiOperation({ summary: 'List refunds, newest first' })
  @ApiOkResponse({ type: RefundListDto })
  list(@CurrentPrincipal() p: Principal, @Query() q: RefundListQueryDto): Promise<RefundListDto> {
    return this.refunds.list(p, { limit: q.limit, startingAfter: q.starting_after, status: q.status });
  }

  @Get('refunds/:id')
  @Runs(GET_REFUND)
  @ApiOperation({ summary: 'Retrieve a refund' })
  @ApiOkResponse({ type: RefundDto })
  get(@CurrentPrincipal() p: Principal, @Param('id', uuid('refund')) id: string): Promise<RefundDto> {
    return this.refunds.get(p, id);
  }

  @Post('refunds/:id/submit')
  @HttpCode(200)
  @Runs(SUBMIT_REFUND)
  @ApiOperation({
    summary: 'Submit a refund: the signature of its typedData (relayed gaslessly) or the txHash of your own USDC transfer',
    description: 'Exactly one of signature and txHash. A txHash is verified on chain (token, from, to, amount; one refund per transfer log).',
  })
  @ApiOkResponse({ type: RefundDto })
  @ApiConflictResponse(BOUND)
  submit(@CurrentPrincipal() p: Principal, @Param('id', uuid('refund')) id: string, @Body() body: SubmitRefundDto) {
    return this.ops.submit.work({ principal: p, params: { id } }, body);
  }

  @Post('refunds/:id/cancel')
  @HttpCode(200)
  @Runs(CANCEL_REFUND)
  @ApiOperation({ summary: 'Cancel a refund while it requires a signature (409 otherwise)' })
  @ApiOkResponse({ type: RefundDto })
  @ApiConflictResponse({ description: 'invalid_request: the refund is no longer requires_signature', type: ErrorBody })
  cancel(@CurrentPrincipal() p: Principal, @Param('id', uuid('refund')) id: string) {
    return this.ops.cancel.work({ principal: p, params: { id } }, {});
  }
}
