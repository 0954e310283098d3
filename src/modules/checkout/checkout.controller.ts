import { Body, Controller, Get, HttpCode, Param, ParseUUIDPipe, Post, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentPrincipal } from '../../kernel/auth/auth.decorators';
import type { Principal } from '../../kernel/auth/principal';
import { AppError } from '../../common/errors/app-error';
import { ApiStandardErrors } from '../../common/http/api-errors.decorator';
import { ListQueryDto } from '../../common/http/list.dto';
import type { IdempotentSteps } from '../../kernel/idempotency/idempotent.decorator';
import { Runs } from '../../kernel/http';
import { CREATE_CHECKOUT, GET_CHECKOUT, LIST_CHECKOUTS } from './checkout.operations';
import { CheckoutService } from './checkout.service';
import { CheckoutSessionDto, CheckoutSessionListDto } from './dto/checkout-session.dto';
import { CreateCheckoutSessionDto } from './dto/create-checkout-session.dto';

const notFoundOnBadId = new ParseUUIDPipe({ exceptionFactory: () => AppError.notFound('checkout session') });

@ApiTags('checkout')
@Controller('api/v1/checkout-sessions')
export class CheckoutController {
  constructor(private readonly checkout: CheckoutService) {}

  @Post()
  @HttpCode(200)
  @Runs(CREATE_CHECKOUT)
  @ApiOperation({ summary: 'Create an escrow-settled checkout session' })
  @ApiOkResponse({ type: CheckoutSessionDto })
  @ApiStandardErrors()
  create(@CurrentPrincipal() principal: Principal, @Body() body: CreateCheckoutSessionDto): Promise<IdempotentSteps<void, CheckoutSessionDto>> {
    return this.checkout.createWork(principal, body);
  }

  @Get()
  @Runs(LIST_CHECKOUTS)
  @ApiOperation({ summary: 'List checkout sessions, newest first' })
  @ApiOkResponse({ type: CheckoutSessionListDto })
  @ApiStandardErrors()
  list(@CurrentPrincipal() principal: Principal, @Query() q: ListQueryDto): Promise<CheckoutSessionListDto> {
    return this.checkout.list(principal, q.limit, q.starting_after);
  }

  @Get(':id')
  @Runs(GET_CHECKOUT)
  @ApiOperation({ summary: 'Retrieve a checkout session' })
  @ApiOkResponse({ type: CheckoutSessionDto })
  @ApiStandardErrors({ notFound: true })
  get(@CurrentPrincipal() principal: Principal, @Param('id', notFoundOnBadId) id: string): Promise<CheckoutSessionDto> {
    return this.checkout.get(principal, id);
  }
}
