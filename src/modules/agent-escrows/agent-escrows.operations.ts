import { Injectable } from '@nestjs/common';
import { defineOperation, type Operation, type OperationSpec } from '../../kernel/operation';
import { AgentEscrowAction, AgentEscrowsService } from './agent-escrows.service';
import { AgentEscrowActionDto, CreateAgentEscrowDto } from './dto/agent-escrow.dto';

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
