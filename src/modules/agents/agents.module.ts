import { Module } from '@nestjs/common';
import { OrgsModule } from '../orgs/orgs.module';
import { RelayerModule } from '../relayer/relayer.module';
import { AgentsRepository } from './agents.repository';
import { AgentsService } from './agents.service';
import { SignerVault } from './signer-vault.service';

/** Agents, their policy and sealed session signers (docs/architecture.md §13). No controllers. */
@Module({
  imports: [OrgsModule, RelayerModule],
  providers: [AgentsRepository, AgentsService, SignerVault],
  exports: [AgentsRepository, AgentsService, SignerVault],
})
export class AgentsModule {}
