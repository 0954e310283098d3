import { Module } from '@nestjs/common';
import { AgentsModule } from '../agents/agents.module';
import { AgentStops } from './agent-stops.service';
import { PaymentsRepository } from './payments.repository';

/**
 * The payments module's listener of agents that stop spending ({@link AgentStops}), on its own so
 * the CLI (which pauses agents and disables signers but moves no payment) loads it without the
 * payment modes. PaymentsModule imports it; every process with AgentsModule must load it (AgentHooks).
 */
@Module({
  imports: [AgentsModule],
  providers: [PaymentsRepository, AgentStops],
})
export class AgentStopsModule {}
