import { Body, Controller, Get, HttpCode, Param, ParseUUIDPipe, Post } from '@nestjs/common';
import { ApiBadRequestResponse, ApiConflictResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentPrincipal, Public } from '../../kernel/auth/auth.decorators';
import type { Principal } from '../../kernel/auth/principal';
import { AppError } from '../../common/errors/app-error';
import { ErrorBody } from '../../common/errors/error-body';
import { ApiStandardErrors } from '../../common/http/api-errors.decorator';
import { AgentsService } from './agents.service';
import { AgentDto, BalanceDto, EnableSignerDto, EnableSignerResultDto, WithdrawDto, WithdrawResultDto } from './dto/agent.dto';
import { GET_AGENT, GET_AGENT_BALANCE } from './agents.operations';
import { Runs } from '../../kernel/http';

const agentId = new ParseUUIDPipe({ exceptionFactory: () => AppError.notFound('agent') });

@ApiTags('agents')
@Controller('api/v1')
export class AgentsController {
  constructor(private readonly agents: AgentsService) {}

  @Get('agent')
  @Runs(GET_AGENT)
  @ApiOperation({ summary: 'The calling agent: identity, policy, session signer and usage today / this month' })
  @ApiOkResponse({ type: AgentDto })
  @ApiStandardErrors()
  agent(@CurrentPrincipal() p: Principal) {
    return this.agents.view(p.agentId!);
  }

  @Get('balance')
  @Runs(GET_AGENT_BALANCE)
  @ApiOperation({ summary: "USDC of the agent's session signer and of its owner, read from the chain (reads work with AGENTS_ENABLED=false)" })
  @ApiOkResponse({ type: BalanceDto })
  @ApiStandardErrors()
  balance(@CurrentPrincipal() p: Principal) {
    return this.agents.balance(p.agentId!);
  }

  @Post('agents/:id/signer')
  @HttpCode(200)
  @Public()
  @ApiOperation({
    summary: "Owner-signed EnableSigner: turn the agent's session signer on or off (disabling sweeps the float to the owner)",
    description: 'EIP-712 domain {name: "Payments Control Plane Agents", version: "1", chainId}; EnableSigner(string agentId, address signer, bool enabled, bytes32 nonce, uint256 deadline). Single use.',
  })
  @ApiOkResponse({ type: EnableSignerResultDto })
  @ApiBadRequestResponse({ description: 'invalid_request with details.reason: bad_signature, expired, nonce_used', type: ErrorBody })
  @ApiConflictResponse({ description: 'invalid_request, details.reason reverted (details.txHash): the signer is disabled but its float sweep reverted on chain, nothing moved; disable again to sweep', type: ErrorBody })
  @ApiStandardErrors({ notFound: true })
  enableSigner(@Param('id', agentId) id: string, @Body() body: EnableSignerDto) {
    return this.agents.enableSignerBySig(id, body);
  }

  @Post('agents/:id/withdraw')
  @HttpCode(200)
  @Public()
  @ApiOperation({
    summary: 'Owner-signed Withdraw: move float from the session signer back to the owner (outside the policy)',
    description: 'EIP-712 Withdraw(string agentId, uint256 amount, bytes32 nonce, uint256 deadline), amount in base units; executed as the signer’s transferWithAuthorization, relayed. Single use.',
  })
  @ApiOkResponse({ type: WithdrawResultDto })
  @ApiBadRequestResponse({ description: 'invalid_request with details.reason: bad_signature, expired, nonce_used, insufficient_balance', type: ErrorBody })
  @ApiConflictResponse({ description: 'invalid_request, details.reason reverted (details.txHash): the transfer was mined and reverted, nothing moved; sign a new Withdraw', type: ErrorBody })
  @ApiStandardErrors({ notFound: true })
  withdraw(@Param('id', agentId) id: string, @Body() body: WithdrawDto) {
    return this.agents.withdrawBySig(id, body);
  }
}
