import { Injectable, OnModuleInit } from '@nestjs/common';
import { AgentHooks } from '../agents/agent-hooks.service';
import { PaymentsRepository } from './payments.repository';

/**
 * Fails an agent's reserved, still unsigned payments when the agent stops spending (paused:
 * `agent_paused`; signer disabled: `signer_disabled`; docs/decisions.md "Agents and payments"), in
 * the agents module's transaction. Signed ones are left to settle or expire.
 */
@Injectable()
export class AgentStops implements OnModuleInit {
  constructor(
    private readonly hooks: AgentHooks,
    private readonly repo: PaymentsRepository,
  ) {}

  onModuleInit(): void {
    this.hooks.onSpendingStopped((agentId, reason) => this.repo.failUnsignedForAgent(agentId, reason));
  }
}
