import { Body, Controller, Get, Headers, HttpCode, Param, ParseUUIDPipe, Post, Query } from '@nestjs/common';
import { ApiBadRequestResponse, ApiConflictResponse, ApiForbiddenResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentPrincipal } from '../../kernel/auth/auth.decorators';
import type { Principal } from '../../kernel/auth/principal';
import { AppError } from '../../common/errors/app-error';
import { ErrorBody } from '../../common/errors/error-body';
import { Runs } from '../../kernel/http';
import { ApiStandardErrors } from '../../common/http/api-errors.decorator';
import { ListQueryDto } from '../../common/http/list.dto';
import { SPEND_REFUSALS } from '../payments/payments.controller';
import { ACT_ON_AGENT_ESCROW, CREATE_AGENT_ESCROW, GET_AGENT_ESCROW, LIST_AGENT_ESCROWS } from './agent-escrows.operations';
import { AgentEscrowsService } from './agent-escrows.service';
import { AgentEscrowActionDto, AgentEscrowActionResultDto, AgentEscrowDto, AgentEscrowListDto, CreateAgentEscrowDto } from './dto/agent-escrow.dto';

const id = new ParseUUIDPipe({ exceptionFactory: () => AppError.notFound('agent escrow') });

@ApiTags('agents')
@Controller('api/v1/agent-escrows')
export class AgentEscrowsController {
  constructor(private readonly escrows: AgentEscrowsService) {}

  @Post()
  @HttpCode(200)
  @Runs(CREATE_AGENT_ESCROW)
  @ApiOperation({
    summary: "Open an escrow with an organisation, funded from the agent's session signer",
    description: 'Creates a checkout session in the payee organisation (its checkout.* events and seller flows work unchanged) whose escrow has the signer as buyer; a Payment mode "escrow" counts toward the policy.',
  })
  @ApiOkResponse({ type: AgentEscrowDto })
  @ApiBadRequestResponse({ description: 'idempotency_required; invalid_request (amount, unknown payee, not an organisation, no payout address)', type: ErrorBody })
  @ApiForbiddenResponse({ description: SPEND_REFUSALS, type: ErrorBody })
  @ApiStandardErrors()
  create(@CurrentPrincipal() p: Principal, @Body() body: CreateAgentEscrowDto, @Headers('idempotency-key') key?: string) {
    return this.escrows.createWork(p, body, key);
  }

  @Get()
  @Runs(LIST_AGENT_ESCROWS)
  @ApiOperation({ summary: "The agent's escrows, newest first" })
  @ApiOkResponse({ type: AgentEscrowListDto })
  @ApiStandardErrors()
  list(@CurrentPrincipal() p: Principal, @Query() q: ListQueryDto) {
    return this.escrows.list(p, { limit: q.limit, startingAfter: q.starting_after });
  }

  @Get(':id')
  @Runs(GET_AGENT_ESCROW)
  @ApiOperation({ summary: 'One agent escrow' })
  @ApiOkResponse({ type: AgentEscrowDto })
  @ApiStandardErrors({ notFound: true })
  get(@CurrentPrincipal() p: Principal, @Param('id', id) escrowId: string) {
    return this.escrows.get(p, escrowId);
  }

  @Post(':id/release')
  @HttpCode(200)
  @Runs(ACT_ON_AGENT_ESCROW.release)
  @ApiOperation({ summary: 'Release to the seller (signed by the session signer, relayed); confirm: true' })
  @ApiOkResponse({ type: AgentEscrowActionResultDto })
  @ApiConflictResponse({ description: 'invalid_request: the escrow state forbids it (details.status, details.allowed) or the contract refused', type: ErrorBody })
  @ApiForbiddenResponse({ description: 'agents_disabled, agent_paused, signer_required, missing_scope', type: ErrorBody })
  @ApiStandardErrors({ notFound: true })
  release(@CurrentPrincipal() p: Principal, @Param('id', id) escrowId: string, @Body() body: AgentEscrowActionDto) {
    return this.escrows.actWork(p, escrowId, 'release', body ?? {});
  }

  @Post(':id/dispute')
  @HttpCode(200)
  @Runs(ACT_ON_AGENT_ESCROW.dispute)
  @ApiOperation({ summary: 'Dispute (locks the funds for the arbiter); confirm: true' })
  @ApiOkResponse({ type: AgentEscrowActionResultDto })
  @ApiConflictResponse({ description: 'invalid_request: state, or the contract refused', type: ErrorBody })
  @ApiForbiddenResponse({ description: 'agents_disabled, agent_paused, signer_required, missing_scope', type: ErrorBody })
  @ApiStandardErrors({ notFound: true })
  dispute(@CurrentPrincipal() p: Principal, @Param('id', id) escrowId: string, @Body() body: AgentEscrowActionDto) {
    return this.escrows.actWork(p, escrowId, 'dispute', body ?? {});
  }

  @Post(':id/cancel')
  @HttpCode(200)
  @Runs(ACT_ON_AGENT_ESCROW.cancel)
  @ApiOperation({ summary: 'Cancel before the seller accepts; the signer is refunded' })
  @ApiOkResponse({ type: AgentEscrowActionResultDto })
  @ApiConflictResponse({ description: 'invalid_request: state, or the contract refused', type: ErrorBody })
  @ApiForbiddenResponse({ description: 'agents_disabled, agent_paused, signer_required, missing_scope', type: ErrorBody })
  @ApiStandardErrors({ notFound: true })
  cancel(@CurrentPrincipal() p: Principal, @Param('id', id) escrowId: string, @Body() body: AgentEscrowActionDto) {
    return this.escrows.actWork(p, escrowId, 'cancel', body ?? {});
  }
}
