import { Injectable } from '@nestjs/common';
import type { Operation } from '../../../kernel/operation';
import { AgentEscrowsOperations } from '../../../modules/agent-escrows/agent-escrows.operations';
import type { CreateAgentEscrowDto } from '../../../modules/agent-escrows/dto/agent-escrow.dto';
import { AgentsService } from '../../../modules/agents/agents.service';
import type { CreatePaymentDto } from '../../../modules/payments/dto/payment.dto';
import { PaymentsOperations } from '../../../modules/payments/payments.operations';
import type { McpTool, McpToolContext, ServiceTool } from '../mcp-tool';
import { GET_AGENT, GET_AGENT_BALANCE } from '../../../modules/agents/agents.operations';

/** svc_agent_get: GET /api/v1/agent (identity, policy, signer, usage of the calling agent). */
@Injectable()
export class AgentGetTool implements ServiceTool {
  readonly name = 'svc_agent_get';
  readonly title = 'This agent';
  readonly description = 'The calling agent: identity, spending policy, session signer and usage today and this month.';
  readonly annotations = { readOnlyHint: true, idempotentHint: true };
  readonly declaration = GET_AGENT;
  constructor(private readonly agents: AgentsService) {}
  run(ctx: McpToolContext) {
    return this.agents.view(ctx.principal.agentId!);
  }
}

/** svc_get_balance: GET /api/v1/balance (the signer's and the owner's USDC, decimal text). */
@Injectable()
export class GetBalanceTool implements ServiceTool {
  readonly name = 'svc_get_balance';
  readonly title = 'Balance';
  readonly description = 'USDC of the session signer (on chain, and available after open reservations) and of the owner.';
  readonly annotations = { readOnlyHint: true, idempotentHint: true };
  readonly declaration = GET_AGENT_BALANCE;
  constructor(private readonly agents: AgentsService) {}
  run(ctx: McpToolContext) {
    return this.agents.balance(ctx.principal.agentId!);
  }
}

/**
 * svc_pay: the operation `pay` of POST /api/v1/payments — an instant USDC payment from the session
 * signer under the agent's policy (DESIGN §13); idempotencyKey required, kept by the payment itself
 * (row-owned, DESIGN §5).
 */
@Injectable()
export class PayTool implements McpTool<CreatePaymentDto> {
  readonly name = 'svc_pay';
  readonly title = 'Pay';
  readonly description = 'Pays a merchant handle or an agent slug in USDC under this agent’s spending policy. Needs idempotencyKey.';
  readonly annotations = { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: true };
  readonly operation: Operation<CreatePaymentDto>;
  constructor(ops: PaymentsOperations) {
    this.operation = ops.pay;
  }
}

/** svc_create_escrow: the operation `create-agent-escrow` of POST /api/v1/agent-escrows — an escrow with this agent's signer as buyer. */
@Injectable()
export class CreateEscrowTool implements McpTool<CreateAgentEscrowDto> {
  readonly name = 'svc_create_escrow';
  readonly title = 'Create an escrow (agent as buyer)';
  readonly description = 'A checkout in the seller organisation funded from the session signer; release, dispute or cancel it later. Needs idempotencyKey.';
  readonly annotations = { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: true };
  readonly operation: Operation<CreateAgentEscrowDto>;
  constructor(ops: AgentEscrowsOperations) {
    this.operation = ops.create;
  }
}
