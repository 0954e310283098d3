import { Body, Controller, Get, HttpCode, Param, ParseUUIDPipe, Post, Put, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentPrincipal, RequireConsole } from '../../../kernel/auth/auth.decorators';
import type { Principal } from '../../../kernel/auth/principal';
import { AGENT_SCOPES } from '../../../kernel/auth/scopes';
import { AppError } from '../../../common/errors/app-error';
import { ApiStandardErrors } from '../../../common/http/api-errors.decorator';
import { NoStore } from '../../../common/http/no-store.decorator';
import { Idempotent } from '../../../kernel/idempotency/idempotent.decorator';
import { AgentsService, ConsoleActor } from '../../../modules/agents/agents.service';
import { AgentDto, BalanceDto } from '../../../modules/agents/dto/agent.dto';
import { MandateListDto } from '../../../modules/mandates/dto/mandate.dto';
import { MandatesService } from '../../../modules/mandates/mandates.service';
import { PaymentListDto, PaymentListQueryDto } from '../../../modules/payments/dto/payment.dto';
import { PaymentsService } from '../../../modules/payments/payments.service';
import { OrgsService } from '../../../modules/orgs/orgs.service';
import { ListQueryDto } from '../../../common/http/list.dto';
import { AddOwnerDto, ApiKeyDto, CreateAgentDto, CreateAgentKeyDto, CreateApiKeyDto, CreatedApiKeyDto, CreatedOAuthClientDto, OAuthClientDto, OwnerDto, PolicyDto, ResumeAgentDto } from './dto/console.dto';

const uuid = (what: string) => new ParseUUIDPipe({ exceptionFactory: () => AppError.notFound(what) });

/** The list view of a key: never its secret or digest. */
function keyView(k: Awaited<ReturnType<OrgsService['listApiKeys']>>[number]): ApiKeyDto {
  return { id: k.id, kind: k.kind, agentId: k.agentId, prefix: k.displayPrefix, scopes: k.scopes, createdAt: k.createdAt.toISOString(), revokedAt: k.revokedAt?.toISOString() ?? null, lastUsedAt: k.lastUsedAt?.toISOString() ?? null, createdBy: k.createdBy ?? null };
}

/** The console session acting, for the agent-owner rule (DESIGN §19 "Whose float it is"). */
function actor(p: Principal, consent?: ConsoleActor['consent']): ConsoleActor {
  return { address: p.address!, consent };
}

/** The list view of an OAuth client: never its secret or digest. */
function oauthClientView(c: { clientId: string; scopes: string[]; createdAt: Date; revokedAt: Date | null }): OAuthClientDto {
  return { clientId: c.clientId, scopes: c.scopes, createdAt: c.createdAt.toISOString(), revokedAt: c.revokedAt?.toISOString() ?? null };
}

/**
 * Owner actions of the console (docs/architecture.md §19) that were operator CLI commands: owners,
 * API keys, agents, their keys, policy and pause, and an agent's payments and mandates. Every route
 * needs a console session acting for an organisation it owns (`@RequireConsole`, 403 for API keys)
 * and runs through the one guard, validation pipe and, where a retry could double an effect, the
 * idempotency interceptor. Key creation is not replayable: a stored replay would keep the secret at
 * rest (as webhook secrets, docs/decisions.md "Console").
 */
@ApiTags('console')
@Controller('api/v1')
export class ConsoleAdminController {
  constructor(
    private readonly orgs: OrgsService,
    private readonly agents: AgentsService,
    private readonly payments: PaymentsService,
    private readonly mandates: MandatesService,
  ) {}

  /**
   * The agent `id` of the principal's organisation, and, for an agent owner's session (which acts
   * for one agent, DESIGN §19), that very agent.
   * @throws AppError not_found (agent) otherwise.
   */
  private async ownAgent(p: Principal, id: string): Promise<void> {
    if (p.agentId !== null && p.agentId !== id.toLowerCase()) throw AppError.notFound('agent');
    await this.agents.requireInOrganization(p.organizationId, id);
  }

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
  @RequireConsole()
  @ApiOperation({ summary: 'Add an owner address (idempotent)' })
  @ApiOkResponse({ type: [OwnerDto] })
  @ApiStandardErrors()
  addOwner(@CurrentPrincipal() p: Principal, @Body() body: AddOwnerDto) {
    return this.orgs.addOwner(p.organizationId, body.address);
  }

  @Post('owners/:address/remove')
  @HttpCode(200)
  @RequireConsole()
  @ApiOperation({ summary: 'Remove an owner address; never the last (409 last_owner)' })
  @ApiOkResponse({ type: [OwnerDto] })
  @ApiStandardErrors({ notFound: true })
  removeOwner(@CurrentPrincipal() p: Principal, @Param('address') address: string) {
    return this.orgs.removeOwner(p.organizationId, address);
  }

  @Get('api-keys')
  @RequireConsole()
  @ApiOperation({ summary: "The organisation's merchant and agent API keys (prefix, scopes, created, last used, revoked; never the secret)" })
  @ApiOkResponse({ type: [ApiKeyDto] })
  @ApiStandardErrors()
  async apiKeys(@CurrentPrincipal() p: Principal): Promise<ApiKeyDto[]> {
    return (await this.orgs.listApiKeys(p.organizationId)).map(keyView);
  }

  @Post('api-keys')
  @HttpCode(200)
  @NoStore()
  @RequireConsole()
  @ApiOperation({ summary: 'Create a merchant key; the secret is in this response only' })
  @ApiOkResponse({ type: CreatedApiKeyDto })
  @ApiStandardErrors()
  async createApiKey(@CurrentPrincipal() p: Principal, @Body() body: CreateApiKeyDto): Promise<CreatedApiKeyDto> {
    const { key, secret } = await this.orgs.createApiKey({ organizationId: p.organizationId, kind: 'merchant', scopes: body.scopes, createdBy: p.actor });
    return { ...keyView(key), createdAt: new Date().toISOString(), secret };
  }

  @Post('api-keys/:id/revoke')
  @HttpCode(200)
  @RequireConsole()
  @ApiOperation({ summary: 'Revoke a key of this organisation: it answers 401 from the next request on' })
  @ApiOkResponse({ type: ApiKeyDto })
  @ApiStandardErrors({ notFound: true })
  async revokeApiKey(@CurrentPrincipal() p: Principal, @Param('id', uuid('api key')) id: string): Promise<ApiKeyDto> {
    await this.orgs.revokeOwnApiKey(p.organizationId, id);
    return (await this.orgs.listApiKeys(p.organizationId)).filter((k) => k.id === id).map(keyView)[0];
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
  @RequireConsole()
  @ApiOperation({ summary: 'Create an OAuth client (client-credentials grant, merchant scopes); the secret is in this response only' })
  @ApiOkResponse({ type: CreatedOAuthClientDto })
  @ApiStandardErrors()
  async createOAuthClient(@CurrentPrincipal() p: Principal, @Body() body: CreateApiKeyDto): Promise<CreatedOAuthClientDto> {
    const { client, clientSecret } = await this.orgs.createOAuthClient({ organizationId: p.organizationId, scopes: body.scopes });
    return { ...oauthClientView({ ...client, createdAt: client.createdAt ?? new Date() }), clientSecret };
  }

  @Post('oauth-clients/:clientId/revoke')
  @HttpCode(200)
  @RequireConsole()
  @ApiOperation({ summary: 'Revoke an OAuth client of this organisation: no new tokens, and its tokens answer 401 from the next request on' })
  @ApiOkResponse({ type: OAuthClientDto })
  @ApiStandardErrors({ notFound: true })
  async revokeOAuthClient(@CurrentPrincipal() p: Principal, @Param('clientId') clientId: string): Promise<OAuthClientDto> {
    await this.orgs.revokeOwnOAuthClient(p.organizationId, clientId);
    return (await this.orgs.listOAuthClients(p.organizationId)).filter((c) => c.clientId === clientId).map(oauthClientView)[0];
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
  @RequireConsole()
  @Idempotent({ required: false })
  @ApiOperation({
    summary: 'Create an agent with a sealed session signer (disabled, no USDC)',
    description: 'ownerAddress defaults to the signed-in address; another address needs its AgentConsent (create_agent) in ownerProof, else 403 agent_owner_consent_required.',
  })
  @ApiOkResponse({ type: AgentDto })
  @ApiStandardErrors()
  async createAgent(@CurrentPrincipal() p: Principal, @Body() body: CreateAgentDto) {
    const agent = await this.agents.create({ organizationId: p.organizationId, slug: body.slug, ownerAddress: body.ownerAddress ?? p.address!, name: body.name }, actor(p, body.ownerProof));
    return this.agents.view(agent.id);
  }

  @Get('agents/:id')
  @RequireConsole({ agentOwner: true })
  @ApiOperation({ summary: 'An agent of the organisation' })
  @ApiOkResponse({ type: AgentDto })
  @ApiStandardErrors({ notFound: true })
  async agent(@CurrentPrincipal() p: Principal, @Param('id', uuid('agent')) id: string) {
    await this.ownAgent(p, id);
    return this.agents.view(id);
  }

  @Get('agents/:id/balance')
  @RequireConsole({ agentOwner: true })
  @ApiOperation({ summary: "USDC of the agent's session signer and of its owner" })
  @ApiOkResponse({ type: BalanceDto })
  @ApiStandardErrors({ notFound: true })
  async agentBalance(@CurrentPrincipal() p: Principal, @Param('id', uuid('agent')) id: string) {
    await this.ownAgent(p, id);
    return this.agents.balance(id);
  }

  @Put('agents/:id/policy')
  @HttpCode(200)
  @RequireConsole({ agentOwner: true })
  @ApiOperation({
    summary: 'Replace the whole spending policy (amounts decimal text; absent fields are unset)',
    description: "Raising any field needs the agent owner's session or its consent (raise_policy), else 403 agent_owner_consent_required with the typed data to sign.",
  })
  @ApiOkResponse({ type: AgentDto })
  @ApiStandardErrors({ notFound: true })
  async setPolicy(@CurrentPrincipal() p: Principal, @Param('id', uuid('agent')) id: string, @Body() body: PolicyDto) {
    await this.ownAgent(p, id);
    const { consent, ...policy } = body;
    return this.agents.setPolicy(id, policy, actor(p, consent));
  }

  @Post('agents/:id/pause')
  @HttpCode(200)
  @RequireConsole({ agentOwner: true })
  @ApiOperation({ summary: 'Pause the agent: every spend answers 403 agent_paused' })
  @ApiOkResponse({ type: AgentDto })
  @ApiStandardErrors({ notFound: true })
  async pause(@CurrentPrincipal() p: Principal, @Param('id', uuid('agent')) id: string) {
    await this.ownAgent(p, id);
    return this.agents.setPaused(id, true, actor(p));
  }

  @Post('agents/:id/resume')
  @HttpCode(200)
  @RequireConsole({ agentOwner: true })
  @ApiOperation({ summary: "Resume a paused agent: the agent owner's session or its consent (resume), else 403 agent_owner_consent_required" })
  @ApiOkResponse({ type: AgentDto })
  @ApiStandardErrors({ notFound: true })
  async resume(@CurrentPrincipal() p: Principal, @Param('id', uuid('agent')) id: string, @Body() body: ResumeAgentDto) {
    await this.ownAgent(p, id);
    return this.agents.setPaused(id, false, actor(p, body?.consent));
  }

  @Post('agents/:id/keys')
  @HttpCode(200)
  @NoStore()
  @RequireConsole({ agentOwner: true })
  @ApiOperation({
    summary: 'Create an agent key (agent scopes); the secret is in this response only',
    description: "A key that may spend (agent:pay, agent:escrow:fund) needs the agent owner's session or its consent (create_pay_key), else 403 agent_owner_consent_required.",
  })
  @ApiOkResponse({ type: CreatedApiKeyDto })
  @ApiStandardErrors({ notFound: true })
  async createAgentKey(@CurrentPrincipal() p: Principal, @Param('id', uuid('agent')) id: string, @Body() body: CreateAgentKeyDto): Promise<CreatedApiKeyDto> {
    await this.ownAgent(p, id);
    const scopes = body.scopes.length ? body.scopes : [...AGENT_SCOPES];
    await this.agents.authorizeAgentKey(id, scopes, actor(p, body.consent));
    const { key, secret } = await this.orgs.createApiKey({ organizationId: p.organizationId, kind: 'agent', agentId: id, scopes, createdBy: p.actor });
    return { ...keyView(key), createdAt: new Date().toISOString(), secret };
  }

  @Get('agents/:id/payments')
  @RequireConsole({ agentOwner: true })
  @ApiOperation({ summary: "The agent's payments, newest first" })
  @ApiOkResponse({ type: PaymentListDto })
  @ApiStandardErrors({ notFound: true })
  async agentPayments(@CurrentPrincipal() p: Principal, @Param('id', uuid('agent')) id: string, @Query() q: PaymentListQueryDto) {
    await this.ownAgent(p, id);
    return this.payments.list({ ...p, agentId: id }, { limit: q.limit, startingAfter: q.starting_after, status: q.status as Parameters<PaymentsService['list']>[1]['status'] });
  }

  @Get('agents/:id/mandates')
  @RequireConsole({ agentOwner: true })
  @ApiOperation({ summary: "The agent's mandates, newest first" })
  @ApiOkResponse({ type: MandateListDto })
  @ApiStandardErrors({ notFound: true })
  async agentMandates(@CurrentPrincipal() p: Principal, @Param('id', uuid('agent')) id: string, @Query() q: ListQueryDto) {
    await this.ownAgent(p, id);
    return this.mandates.list({ ...p, agentId: id }, { limit: q.limit, startingAfter: q.starting_after });
  }
}
