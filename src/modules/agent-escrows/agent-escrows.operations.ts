import { Injectable } from '@nestjs/common';
import { defineOperation, type Operation, type OperationSpec } from '../../kernel/operation';
import { AgentEscrowAction, AgentEscrowsService } from './agent-escrows.service';
import { AgentEscrowActionDto, CreateAgentEscrowDto } from './dto/agent-escrow.dto';
import { ListQueryDto } from '../../common/http/list.dto';

/** `list-agent-escrows` (GET /agent-escrows): the agent's escrows, newest first. Agent keys with agent:escrow:fund; no key. */
export const LIST_AGENT_ESCROWS: OperationSpec<ListQueryDto> = { name: 'list-agent-escrows', scopes: ['agent:escrow:fund'], kinds: ['agent'], input: ListQueryDto, idempotency: 'none' };

/** `get-agent-escrow` (GET /agent-escrows/{id}): one agent escrow. Agent keys with agent:escrow:fund; no key. */
export const GET_AGENT_ESCROW: OperationSpec = { name: 'get-agent-escrow', scopes: ['agent:escrow:fund'], kinds: ['agent'], idempotency: 'none' };

/**
 * `create-agent-escrow` (POST /agent-escrows, svc_create_escrow; DESIGN §13, §17): an escrow in the
 * payee organisation funded from the agent's signer. Agent keys with agent:escrow:fund; row-owned
 * (the payment, mode escrow, is the record).
 */
export const CREATE_AGENT_ESCROW: OperationSpec<CreateAgentEscrowDto> = {
  name: 'create-agent-escrow',
  scopes: ['agent:escrow:fund'],
  kinds: ['agent'],
  input: CreateAgentEscrowDto,
  idempotency: 'row-owned',
};

/**
 * `<action>-agent-escrow` (POST /agent-escrows/{id}/release|dispute|cancel): the agent's signed
 * EscrowAction, relayed once per key (an in-flight claim while the chain step runs, DESIGN §5).
 */
export const ACT_ON_AGENT_ESCROW: Record<AgentEscrowAction, OperationSpec<AgentEscrowActionDto>> = {
  release: { name: 'release-agent-escrow', scopes: ['agent:escrow:fund'], kinds: ['agent'], input: AgentEscrowActionDto, idempotency: 'required' },
  dispute: { name: 'dispute-agent-escrow', scopes: ['agent:escrow:fund'], kinds: ['agent'], input: AgentEscrowActionDto, idempotency: 'required' },
  cancel: { name: 'cancel-agent-escrow', scopes: ['agent:escrow:fund'], kinds: ['agent'], input: AgentEscrowActionDto, idempotency: 'required' },
};

/** The agent-escrow operations with their work, for the runner (MCP). */
@Injectable()
export class AgentEscrowsOperations {
  readonly create: Operation<CreateAgentEscrowDto>;

  constructor(escrows: AgentEscrowsService) {
    this.create = defineOperation(CREATE_AGENT_ESCROW, (ctx, input) => escrows.createWork(ctx.principal, input, ctx.key));
  }
}
