import { Injectable } from '@nestjs/common';
import { requireUuid } from '../../common/http/path-id';
import { AGENT_SCOPES } from '../../kernel/auth/scopes';
import { defineOperation, type Operation, type OperationContext, type OperationSpec } from '../../kernel/operation';
import { apiKeyView, type CreatedApiKeyDto } from '../orgs/dto/owner.dto';
import { OrgsService } from '../orgs/orgs.service';
import { consoleActor, AgentsService } from './agents.service';
import { CreateAgentDto, CreateAgentKeyDto, PolicyDto, ResumeAgentDto } from './dto/agent-owner.dto';

/**
 * `create-agent` (POST /agents, console; DESIGN §19): an agent with a sealed session signer
 * (disabled, no USDC). A console session acting for its organisation; Idempotency-Key optional.
 * `ownerAddress` defaults to the signed-in address; another address needs its AgentConsent
 * (create_agent) in `ownerProof`, else 403 agent_owner_consent_required.
 */
export const CREATE_AGENT: OperationSpec<CreateAgentDto> = { name: 'create-agent', scopes: [], kinds: ['console'], input: CreateAgentDto, idempotency: 'optional' };

/**
 * An action on one agent from the console (DESIGN §19): a session acting for the agent's
 * organisation, or for the agent itself as its owner address (`consoleActs: 'agent-owner'`); the
 * work checks the agent is the session's ({@link AgentsService.requireOwned}, else 404). No
 * Idempotency-Key: each replaces a state (policy, pause) or shows a secret once (a key).
 */
const agentAction = <I = Record<string, unknown>>(name: string, input?: OperationSpec<I>['input']): OperationSpec<I> => ({ name, scopes: [], kinds: ['console'], consoleActs: 'agent-owner', input, idempotency: 'none' });

/** `set-agent-policy` (PUT /agents/{id}/policy): replaces the whole policy; raising needs the owner's session or consent (raise_policy). */
export const SET_AGENT_POLICY = agentAction<PolicyDto>('set-agent-policy', PolicyDto);
/** `pause-agent` (POST /agents/{id}/pause): every spend answers 403 agent_paused. */
export const PAUSE_AGENT = agentAction('pause-agent');
/** `resume-agent` (POST /agents/{id}/resume): the owner's session or its consent (resume). */
export const RESUME_AGENT = agentAction<ResumeAgentDto>('resume-agent', ResumeAgentDto);
/** `create-agent-key` (POST /agents/{id}/keys): agent scopes (empty = all); a key that may spend needs the owner's session or consent (create_pay_key); its secret is in this answer only. */
export const CREATE_AGENT_KEY = agentAction<CreateAgentKeyDto>('create-agent-key', CreateAgentKeyDto);

/**
 * The agents' console operations with their work (DESIGN §17: declared once; the console's routes
 * state them with `@Runs` and run their work). `{id}` is the path parameter (a UUID, else 404).
 */
@Injectable()
export class AgentsOperations {
  readonly create: Operation<CreateAgentDto>;
  readonly setPolicy: Operation<PolicyDto>;
  readonly pause: Operation;
  readonly resume: Operation<ResumeAgentDto>;
  readonly createKey: Operation<CreateAgentKeyDto>;

  constructor(agents: AgentsService, orgs: OrgsService) {
    /** The agent of the call, once the session may manage it. */
    const owned = async (ctx: OperationContext) => (await agents.requireOwned(ctx.principal, requireUuid(ctx.params.id, 'agent'))).id;
    this.create = defineOperation(CREATE_AGENT, (ctx, input) => ({
      run: async () => {
        const agent = await agents.create(
          { organizationId: ctx.principal.organizationId, slug: input.slug, ownerAddress: input.ownerAddress ?? ctx.principal.address!, name: input.name },
          consoleActor(ctx.principal, input.ownerProof),
        );
        return agents.view(agent.id);
      },
    }));
    this.setPolicy = defineOperation(SET_AGENT_POLICY, (ctx, input) => ({
      run: async () => {
        const { consent, ...policy } = input;
        return agents.setPolicy(await owned(ctx), policy, consoleActor(ctx.principal, consent));
      },
    }));
    this.pause = defineOperation(PAUSE_AGENT, (ctx) => ({ run: async () => agents.setPaused(await owned(ctx), true, consoleActor(ctx.principal)) }));
    this.resume = defineOperation(RESUME_AGENT, (ctx, input) => ({ run: async () => agents.setPaused(await owned(ctx), false, consoleActor(ctx.principal, input?.consent)) }));
    this.createKey = defineOperation(CREATE_AGENT_KEY, (ctx, input) => ({
      run: async (): Promise<CreatedApiKeyDto> => {
        const id = await owned(ctx);
        const scopes = input.scopes.length ? input.scopes : [...AGENT_SCOPES];
        await agents.authorizeAgentKey(id, scopes, consoleActor(ctx.principal, input.consent));
        const { key, secret } = await orgs.createApiKey({ organizationId: ctx.principal.organizationId, kind: 'agent', agentId: id, scopes, createdBy: ctx.principal.actor });
        return { ...apiKeyView(key), createdAt: new Date().toISOString(), secret };
      },
    }));
  }
}
