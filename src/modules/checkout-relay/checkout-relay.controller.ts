import { Body, Controller, Get, HttpCode, Param, ParseUUIDPipe, Post, Query } from '@nestjs/common';
import { ApiConflictResponse, ApiForbiddenResponse, ApiOkResponse, ApiOperation, ApiParam, ApiServiceUnavailableResponse, ApiTags } from '@nestjs/swagger';
import { Public } from '../../kernel/auth/auth.decorators';
import { AppError } from '../../common/errors/app-error';
import { ErrorBody } from '../../common/errors/error-body';
import { ApiStandardErrors } from '../../common/http/api-errors.decorator';
import { CheckoutRelayService } from './checkout-relay.service';
import {
  ActionResultDto,
  ActionTypedDataDto,
  ActorQueryDto,
  BuyerQueryDto,
  CheckoutStateDto,
  FundingTypedDataDto,
  RelayActionDto,
  RelayFundingDto,
  RelayResultDto,
} from './dto/checkout-relay.dto';

const checkoutId = new ParseUUIDPipe({ exceptionFactory: () => AppError.notFound('checkout session') });
const ACTIONS = ['release', 'dispute', 'cancel'] as const;

/**
 * The checkout host's JSON routes behind the pay page (docs/architecture.md §16, docs/api.md
 * "Checkout host JSON"). Public: the checkout id is the capability; rate-limited per client address.
 */
@ApiTags('checkout host')
@Controller('checkout')
export class CheckoutRelayController {
  constructor(private readonly relays: CheckoutRelayService) {}

  @Get(':id/state')
  @Public()
  @ApiOperation({ summary: 'What the pay page shows: order, amount, expiry, the escrow and the buyer actions allowed now' })
  @ApiOkResponse({ type: CheckoutStateDto })
  @ApiStandardErrors({ notFound: true })
  state(@Param('id', checkoutId) id: string): Promise<CheckoutStateDto> {
    return this.relays.state(id);
  }

  @Get(':id/funding')
  @Public()
  @ApiOperation({ summary: 'EIP-3009 ReceiveWithAuthorization typed data for the buyer wallet (sign with eth_signTypedData_v4)' })
  @ApiOkResponse({ type: FundingTypedDataDto })
  @ApiStandardErrors({ notFound: true })
  @ApiConflictResponse({ description: 'invalid_request: the checkout is not open (details.status)', type: ErrorBody })
  funding(@Param('id', checkoutId) id: string, @Query() q: BuyerQueryDto): Promise<FundingTypedDataDto> {
    return this.relays.funding(id, q.buyer);
  }

  @Post(':id/relay')
  @Public()
  @HttpCode(200)
  @ApiOperation({
    summary: 'Relay the buyer’s signed funding authorization (gasless; idempotent by buyer and nonce)',
    description:
      'Stored only when the signature recovers to the buyer, the terms are this checkout’s and a simulated call succeeds; otherwise 400 with details.reason bad_signature, wrong_terms, insufficient_balance or expired, and nothing is stored.',
  })
  @ApiOkResponse({ type: RelayResultDto })
  @ApiStandardErrors({ notFound: true })
  @ApiConflictResponse({ description: 'invalid_request: the checkout is not open, or the authorization was already used', type: ErrorBody })
  relay(@Param('id', checkoutId) id: string, @Body() body: RelayFundingDto): Promise<RelayResultDto> {
    return this.relays.relayFunding(id, body);
  }

  @Get(':id/actions/:action')
  @Public()
  @ApiOperation({ summary: 'EIP-712 EscrowAction typed data for a buyer action (release, dispute, cancel)' })
  @ApiParam({ name: 'action', enum: ACTIONS })
  @ApiOkResponse({ type: ActionTypedDataDto })
  @ApiStandardErrors({ notFound: true })
  @ApiForbiddenResponse({ description: 'forbidden: the actor is not the escrow’s buyer', type: ErrorBody })
  @ApiConflictResponse({ description: 'invalid_request: the escrow’s state does not allow the action', type: ErrorBody })
  actionTypedData(@Param('id', checkoutId) id: string, @Param('action') action: string, @Query() q: ActorQueryDto): Promise<ActionTypedDataDto> {
    if (!(ACTIONS as readonly string[]).includes(action)) throw AppError.invalidParam('action', 'must be release, dispute or cancel');
    return this.relays.actionTypedData(id, action as (typeof ACTIONS)[number], q.actor);
  }

  @Post(':id/actions')
  @Public()
  @HttpCode(200)
  @ApiOperation({ summary: 'Relay the buyer’s signed EscrowAction (gasless); the indexer records the event' })
  @ApiOkResponse({ type: ActionResultDto })
  @ApiStandardErrors({ notFound: true })
  @ApiForbiddenResponse({ description: 'forbidden: the actor is not the escrow’s buyer', type: ErrorBody })
  @ApiConflictResponse({ description: 'invalid_request: the escrow’s state does not allow the action, or the nonce was used', type: ErrorBody })
  @ApiServiceUnavailableResponse({ description: 'unavailable: the relayer queue did not broadcast in time (the action stays queued)', type: ErrorBody })
  action(@Param('id', checkoutId) id: string, @Body() body: RelayActionDto): Promise<ActionResultDto> {
    return this.relays.relayAction(id, body);
  }
}
