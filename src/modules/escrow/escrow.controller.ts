import { Body, Controller, Get, HttpCode, Param, ParseUUIDPipe, Post, Query } from '@nestjs/common';
import { ApiConflictResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentPrincipal, Public } from '../../kernel/auth/auth.decorators';
import type { Principal } from '../../kernel/auth/principal';
import { AppError } from '../../common/errors/app-error';
import { ErrorBody } from '../../common/errors/error-body';
import { ApiStandardErrors } from '../../common/http/api-errors.decorator';
import type { IdempotentSteps } from '../../kernel/idempotency/idempotent.decorator';
import { Runs } from '../../kernel/http';
import { CheckoutFundingDto, ConfirmedEscrowActionDto, EscrowActionDto, EscrowDto, EscrowListDto, EscrowListQueryDto, FundingTermsQueryDto } from './dto/escrow.dto';
import { ACT_ON_ESCROW, GET_ESCROW, LIST_ESCROWS } from './escrow.operations';
import { EscrowService, PreparedEscrowAction } from './escrow.service';

type ActionSteps = IdempotentSteps<PreparedEscrowAction, EscrowDto>;

const escrowId = new ParseUUIDPipe({ exceptionFactory: () => AppError.notFound('escrow') });
const checkoutId = new ParseUUIDPipe({ exceptionFactory: () => AppError.notFound('checkout session') });
const ACTION_DOCS = 'The party signs and sends the contract call first, then reports its txHash; the API verifies it on-chain.';

@ApiTags('escrows')
@Controller('api/v1/escrows')
@ApiStandardErrors({ notFound: true })
export class EscrowController {
  constructor(private readonly escrows: EscrowService) {}

  @Get()
  @Runs(LIST_ESCROWS)
  @ApiOperation({ summary: 'List escrows your organisation is buyer or seller of, newest first' })
  @ApiOkResponse({ type: EscrowListDto })
  list(@CurrentPrincipal() p: Principal, @Query() q: EscrowListQueryDto): Promise<EscrowListDto> {
    return this.escrows.list(p, { limit: q.limit, startingAfter: q.starting_after, role: q.role, status: q.status });
  }

  @Get(':id')
  @Runs(GET_ESCROW)
  @ApiOperation({ summary: 'Retrieve an escrow with its on-chain transactions' })
  @ApiOkResponse({ type: EscrowDto })
  get(@CurrentPrincipal() p: Principal, @Param('id', escrowId) id: string): Promise<EscrowDto> {
    return this.escrows.get(p, id);
  }

  @Post(':id/accept')
  @HttpCode(200)
  @Runs(ACT_ON_ESCROW.accept)
  @ApiOperation({ summary: 'Seller accepts a funded escrow', description: ACTION_DOCS })
  @ApiOkResponse({ type: EscrowDto })
  @ApiConflictResponse({ description: 'invalid_request: state forbids the action, or the tx is not mined yet (details.reason pending)', type: ErrorBody })
  accept(@CurrentPrincipal() p: Principal, @Param('id', escrowId) id: string, @Body() body: EscrowActionDto): ActionSteps {
    return this.escrows.actionWork(p, id, 'accept', body);
  }

  @Post(':id/decline')
  @HttpCode(200)
  @Runs(ACT_ON_ESCROW.decline)
  @ApiOperation({ summary: 'Seller declines; the buyer is refunded', description: ACTION_DOCS })
  @ApiOkResponse({ type: EscrowDto })
  decline(@CurrentPrincipal() p: Principal, @Param('id', escrowId) id: string, @Body() body: EscrowActionDto): ActionSteps {
    return this.escrows.actionWork(p, id, 'decline', body);
  }

  @Post(':id/mark-delivered')
  @HttpCode(200)
  @Runs(ACT_ON_ESCROW['mark-delivered'])
  @ApiOperation({ summary: 'Seller marks delivered; the inspection window starts', description: ACTION_DOCS })
  @ApiOkResponse({ type: EscrowDto })
  markDelivered(@CurrentPrincipal() p: Principal, @Param('id', escrowId) id: string, @Body() body: EscrowActionDto): ActionSteps {
    return this.escrows.actionWork(p, id, 'mark-delivered', body);
  }

  @Post(':id/release')
  @HttpCode(200)
  @Runs(ACT_ON_ESCROW.release)
  @ApiOperation({ summary: 'Buyer releases the funds to the seller (buyer only; confirm: true)', description: ACTION_DOCS })
  @ApiOkResponse({ type: EscrowDto })
  release(@CurrentPrincipal() p: Principal, @Param('id', escrowId) id: string, @Body() body: ConfirmedEscrowActionDto): ActionSteps {
    return this.escrows.actionWork(p, id, 'release', body);
  }

  @Post(':id/cancel')
  @HttpCode(200)
  @Runs(ACT_ON_ESCROW.cancel)
  @ApiOperation({ summary: 'Buyer cancels a funded escrow and is refunded', description: ACTION_DOCS })
  @ApiOkResponse({ type: EscrowDto })
  cancel(@CurrentPrincipal() p: Principal, @Param('id', escrowId) id: string, @Body() body: EscrowActionDto): ActionSteps {
    return this.escrows.actionWork(p, id, 'cancel', body);
  }

  @Post(':id/dispute')
  @HttpCode(200)
  @Runs(ACT_ON_ESCROW.dispute)
  @ApiOperation({ summary: 'Buyer or seller disputes; funds stay locked until the arbiter resolves (confirm: true)', description: ACTION_DOCS })
  @ApiOkResponse({ type: EscrowDto })
  dispute(@CurrentPrincipal() p: Principal, @Param('id', escrowId) id: string, @Body() body: ConfirmedEscrowActionDto): ActionSteps {
    return this.escrows.actionWork(p, id, 'dispute', body);
  }
}

@ApiTags('checkout')
@Controller('api/v1/checkout-sessions')
export class CheckoutFundingController {
  constructor(private readonly escrows: EscrowService) {}

  @Get(':id/funding-terms')
  @Public()
  @ApiOperation({ summary: 'Signed escrow funding terms of an open checkout (public: the payer needs them)' })
  @ApiOkResponse({ type: CheckoutFundingDto })
  @ApiStandardErrors({ notFound: true })
  @ApiConflictResponse({ description: 'invalid_request: the checkout is not open', type: ErrorBody })
  fundingTerms(@Param('id', checkoutId) id: string, @Query() q: FundingTermsQueryDto): Promise<CheckoutFundingDto> {
    return this.escrows.fundingTerms(id, q.buyer);
  }
}
