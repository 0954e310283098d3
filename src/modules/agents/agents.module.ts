import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Agent } from './agent.entity';
import { OrgsModule } from '../orgs/orgs.module';
import { RelayerModule } from '../../chain/relayer/relayer.module';
import { AgentHooks } from './agent-hooks.service';
import { AgentSpendGate } from './agent-spend.service';
import { AgentsRepository } from './agents.repository';
import { AgentsService } from './agents.service';
import { SignerVault } from './signer-vault.service';

/** Agents, their policy and sealed session signers (docs/architecture.md §13). No controllers. */
@Module({
  imports: [TypeOrmModule.forFeature([Agent]), OrgsModule, RelayerModule],
  providers: [AgentsRepository, AgentsService, SignerVault, AgentSpendGate, AgentHooks],
  exports: [AgentsService, SignerVault, AgentSpendGate, AgentHooks],
})
export class AgentsModule {}
