import { Body, Controller, Get, HttpCode, Param, ParseUUIDPipe, Post, Put, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentPrincipal, RequireConsole } from '../../../kernel/auth/auth.decorators';
import type { Principal } from '../../../kernel/auth/principal';
import { AppError } from '../../../common/errors/app-error';
import { ApiStandardErrors } from '../../../common/http/api-errors.decorator';
import { NoStore } from '../../../common/http/no-store.decorator';
import { Runs, runWork } from '../../../kernel/http';
import { AgentsService } from '../../../modules/agents/agents.service';
import { AgentsOperations, CREATE_AGENT, CREATE_AGENT_KEY, PAUSE_AGENT, RESUME_AGENT, SET_AGENT_POLICY } from '../../../modules/agents/agents.operations';
import { apiKeyView, oauthClientView } from '../../../modules/orgs/dto/owner.dto';
import { ADD_OWNER, CREATE_API_KEY, CREATE_OAUTH_CLIENT, OrgsOperations, REMOVE_OWNER, REVOKE_API_KEY, REVOKE_OAUTH_CLIENT } from '../../../modules/orgs/orgs.operations';
import { AgentDto, BalanceDto } from '../../../modules/agents/dto/agent.dto';
import { MandateListDto } from '../../../modules/mandates/dto/mandate.dto';
import { MandatesService } from '../../../modules/mandates/mandates.service';
import { PaymentListDto, PaymentListQueryDto } from '../../../modules/payments/dto/payment.dto';
import { PaymentsService } from '../../../modules/payments/payments.service';
import { OrgsService } from '../../../modules/orgs/orgs.service';
import { ListQueryDto } from '../../../common/http/list.dto';
import { AddOwnerDto, ApiKeyDto, CreateAgentDto, CreateAgentKeyDto, CreateApiKeyDto, CreatedApiKeyDto, CreatedOAuthClientDto, OAuthClientDto, OwnerDto, PolicyDto, ResumeAgentDto } from './dto/console.dto';

const uuid = (what: string) => new ParseUUIDPipe({ exceptionFactory: () => AppError.notFound(what) });

/**
 * Owner actions of the console (docs/architecture.md §19) that were operator CLI commands: owners,
 * API keys, agents, their keys, policy and pause, and an agent's payments and mandates. Every route
 * needs a console session acting for an organisation it owns (or, on an agent's routes, for that
 * agent as its owner address; 403 console_session_required for API keys). Each write runs its
 * operation declared in the orgs or agents domain (`@Runs`, DESIGN §17: access, validation and its
 * idempotency mode there; the ownership check and the views in those domains); the reads check the
 * agent through {@link AgentsService.requireOwned}.
 */
@ApiTags('console')
@Controller('api/v1')
export class ConsoleAdminController {
  constructor(
    private readonly orgs: OrgsService,
    private readonly agents: AgentsService,
    private readonly payments: PaymentsService,
    private readonly mandates: MandatesService,
    private readonly orgOps: OrgsOperations,
    private readonly agentOps: AgentsOperations,
  ) {}

  @Get('owners')
  @RequireConsole()
  @ApiOperation({ summary: "The organisation's owner addresses" })
  @ApiOkResponse({ type: [OwnerDto] })
  @ApiStandardErrors()
  owners(@CurrentPrincipal() p: Principal) {
    return this.orgs.owners(p.organizationId);
  }

  @Post('owners')
  @HttpCode(200)
  @Runs(ADD_OWNER)
  @ApiOperation({ summary: 'Add an owner address (idempotent)' })
  @ApiOkResponse({ type: [OwnerDto] })
  @ApiStandardErrors()
  addOwner(@CurrentPrincipal() p: Principal, @Body() body: AddOwnerDto) {
    return runWork(this.orgOps.addOwner.work({ principal: p, params: {} }, body));
  }

  @Post('owners/:address/remove')
  @HttpCode(200)
  @Runs(REMOVE_OWNER)
  @ApiOperation({ summary: 'Remove an owner address; never the last (409 last_owner)' })
  @ApiOkResponse({ type: [OwnerDto] })
  @ApiStandardErrors({ notFound: true })
  removeOwner(@CurrentPrincipal() p: Principal, @Param('address') address: string) {
    return runWork(this.orgOps.removeOwner.work({ principal: p, params: { address } }, {}));
  }

  @Get('api-keys')
  @RequireConsole()
  @ApiOperation({ summary: "The organisation's merchant and agent API keys (prefix, scopes, created, last used, revoked; never the secret)" })
  @ApiOkResponse({ type: [ApiKeyDto] })
  @ApiStandardErrors()
  async apiKeys(@CurrentPrincipal() p: Principal): Promise<ApiKeyDto[]> {
    return (await this.orgs.listApiKeys(p.organizationId)).map(apiKeyView);
  }

  @Post('api-keys')
  @HttpCode(200)
  @NoStore()
  @Runs(CREATE_API_KEY)
  @ApiOperation({ summary: 'Create a merchant key; the secret is in this response only' })
  @ApiOkResponse({ type: CreatedApiKeyDto })
  @ApiStandardErrors()
  createApiKey(@CurrentPrincipal() p: Principal, @Body() body: CreateApiKeyDto): Promise<CreatedApiKeyDto> {
    return runWork(this.orgOps.createApiKey.work({ principal: p, params: {} }, body));
  }

  @Post('api-keys/:id/revoke')
  @HttpCode(200)
  @Runs(REVOKE_API_KEY)
  @ApiOperation({ summary: 'Revoke a key of this organisation: it answers 401 from the next request on' })
  @ApiOkResponse({ type: ApiKeyDto })
  @ApiStandardErrors({ notFound: true })
  revokeApiKey(@CurrentPrincipal() p: Principal, @Param('id', uuid('api key')) id: string): Promise<ApiKeyDto> {
    return runWork(this.orgOps.revokeApiKey.work({ principal: p, params: { id } }, {}));
  }

  @Get('oauth-clients')
  @RequireConsole()
  @ApiOperation({ summary: "The organisation's OAuth clients (client_id, scopes, created, revoked; never the secret)" })
  @ApiOkResponse({ type: [OAuthClientDto] })
  @ApiStandardErrors()
  async oauthClients(@CurrentPrincipal() p: Principal): Promise<OAuthClientDto[]> {
    return (await this.orgs.listOAuthClients(p.organizationId)).map(oauthClientView);
  }

  @Post('oauth-clients')
  @HttpCode(200)
  @NoStore()
  @Runs(CREATE_OAUTH_CLIENT)
  @ApiOperation({ summary: 'Create an OAuth client (client-credentials grant, merchant scopes); the secret is in this response only' })
  @ApiOkResponse({ type: CreatedOAuthClientDto })
  @ApiStandardErrors()
  createOAuthClient(@CurrentPrincipal() p: Principal, @Body() body: CreateApiKeyDto): Promise<CreatedOAuthClientDto> {
    return runWork(this.orgOps.createOAuthClient.work({ principal: p, params: {} }, body));
  }

  @Post('oauth-clients/:clientId/revoke')
  @HttpCode(200)
  @Runs(REVOKE_OAUTH_CLIENT)
  @ApiOperation({ summary: 'Revoke an OAuth client of this organisation: no new tokens, and its tokens answer 401 from the next request on' })
  @ApiOkResponse({ type: OAuthClientDto })
  @ApiStandardErrors({ notFound: true })
  revokeOAuthClient(@CurrentPrincipal() p: Principal, @Param('clientId') clientId: string): Promise<OAuthClientDto> {
    return runWork(this.orgOps.revokeOAuthClient.work({ principal: p, params: { clientId } }, {}));
  }

  @Get('agents')
  @RequireConsole()
  @ApiOperation({ summary: "The organisation's agents with policy, signer and usage" })
  @ApiOkResponse({ type: [AgentDto] })
  @ApiStandardErrors()
  listAgents(@CurrentPrincipal() p: Principal) {
    return this.agents.listForOrganization(p.organizationId);
  }

  @Post('agents')
  @HttpCode(200)
  @Runs(CREATE_AGENT)
  @ApiOperation({
    summary: 'Create an agent with a sealed session signer (disabled, no USDC)',
    description: 'ownerAddress defaults to the signed-in address; another address needs its AgentConsent (create_agent) in ownerProof, else 403 agent_owner_consent_required.',
  })
  @ApiOkResponse({ type: AgentDto })
  @ApiStandardErrors()
  createAgent(@CurrentPrincipal() p: Principal, @Body() body: CreateAgentDto) {
    return this.agentOps.create.work({ principal: p, params: {} }, body);
  }

  @Get('agents/:id')
  @RequireConsole({ agentOwner: true })
  @ApiOperation({ summary: 'An agent of the organisation' })
  @ApiOkResponse({ type: AgentDto })
  @ApiStandardErrors({ notFound: true })
  async agent(@CurrentPrincipal() p: Principal, @Param('id', uuid('agent')) id: string) {
    await this.agents.requireOwned(p, id);
    return this.agents.view(id);
  }

  @Get('agents/:id/balance')
  @RequireConsole({ agentOwner: true })
  @ApiOperation({ summary: "USDC of the agent's session signer and of its owner" })
  @ApiOkResponse({ type: BalanceDto })
  @ApiStandardErrors({ notFound: true })
  async agentBalance(@CurrentPrincipal() p: Principal, @Param('id', uuid('agent')) id: string) {
    await this.agents.requireOwned(p, id);
    return this.agents.balance(id);
  }

  @Put('agents/:id/policy')
  @HttpCode(200)
  @Runs(SET_AGENT_POLICY)
  @ApiOperation({
    summary: 'Replace the whole spending policy (amounts decimal text; absent fields are unset)',
    description: "Raising any field needs the agent owner's session or its consent (raise_policy), else 403 agent_owner_consent_required with the typed data to sign.",
  })
  @ApiOkResponse({ type: AgentDto })
  @ApiStandardErrors({ notFound: true })
  setPolicy(@CurrentPrincipal() p: Principal, @Param('id', uuid('agent')) id: string, @Body() body: PolicyDto) {
    return runWork(this.agentOps.setPolicy.work({ principal: p, params: { id } }, body));
  }

  @Post('agents/:id/pause')
  @HttpCode(200)
  @Runs(PAUSE_AGENT)
  @ApiOperation({ summary: 'Pause the agent: every spend answers 403 agent_paused' })
  @ApiOkResponse({ type: AgentDto })
  @ApiStandardErrors({ notFound: true })
  pause(@CurrentPrincipal() p: Principal, @Param('id', uuid('agent')) id: string) {
    return runWork(this.agentOps.pause.work({ principal: p, params: { id } }, {}));
  }

  @Post('agents/:id/resume')
  @HttpCode(200)
  @Runs(RESUME_AGENT)
  @ApiOperation({ summary: "Resume a paused agent: the agent owner's session or its consent (resume), else 403 agent_owner_consent_required" })
  @ApiOkResponse({ type: AgentDto })
  @ApiStandardErrors({ notFound: true })
  resume(@CurrentPrincipal() p: Principal, @Param('id', uuid('agent')) id: string, @Body() body: ResumeAgentDto) {
    return runWork(this.agentOps.resume.work({ principal: p, params: { id } }, body ?? {}));
  }

  @Post('agents/:id/keys')
  @HttpCode(200)
  @NoStore()
  @Runs(CREATE_AGENT_KEY)
  @ApiOperation({
    summary: 'Create an agent key (agent scopes); the secret is in this response only',
    description: "A key that may spend (agent:pay, agent:escrow:fund) needs the agent owner's session or its consent (create_pay_key), else 403 agent_owner_consent_required.",
  })
  @ApiOkResponse({ type: CreatedApiKeyDto })
  @ApiStandardErrors({ notFound: true })
  createAgentKey(@CurrentPrincipal() p: Principal, @Param('id', uuid('agent')) id: string, @Body() body: CreateAgentKeyDto): Promise<CreatedApiKeyDto> {
    return runWork(this.agentOps.createKey.work({ principal: p, params: { id } }, body));
  }

  @Get('agents/:id/payments')
  @RequireConsole({ agentOwner: true })
  @ApiOperation({ summary: "The agent's payments, newest first" })
  @ApiOkResponse({ type: PaymentListDto })
  @ApiStandardErrors({ notFound: true })
  async agentPayments(@CurrentPrincipal() p: Principal, @Param('id', uuid('agent')) id: string, @Query() q: PaymentListQueryDto) {
    const agent = await this.agents.requireOwned(p, id);
    return this.payments.pageForAgent(agent.id, { limit: q.limit, startingAfter: q.starting_after, status: q.status as Parameters<PaymentsService['list']>[1]['status'] });
  }

  @Get('agents/:id/mandates')
  @RequireConsole({ agentOwner: true })
  @ApiOperation({ summary: "The agent's mandates, newest first" })
  @ApiOkResponse({ type: MandateListDto })
  @ApiStandardErrors({ notFound: true })
  async agentMandates(@CurrentPrincipal() p: Principal, @Param('id', uuid('agent')) id: string, @Query() q: ListQueryDto) {
    const agent = await this.agents.requireOwned(p, id);
    return this.mandates.listForAgent(agent.id, { limit: q.limit, startingAfter: q.starting_after });
  }
}
