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
import { AgentDirectory } from '../orgs/agent-directory.port';
import { AgentsDirectory } from './agent-directory.service';

/** Agents, their policy and sealed session signers (docs/architecture.md §13). No controllers. Provides orgs' {@link AgentDirectory} port. */
@Module({
  imports: [TypeOrmModule.forFeature([Agent]), OrgsModule, RelayerModule],
  providers: [AgentsRepository, AgentsService, SignerVault, AgentSpendGate, AgentHooks, AgentsDirectory, { provide: AgentDirectory, useExisting: AgentsDirectory }],
  exports: [AgentsService, SignerVault, AgentSpendGate, AgentHooks, AgentDirectory],
})
export class AgentsModule {}
