import { Module } from '@nestjs/common';
import { AgentEscrowsController } from './agent-escrows.controller';
import { AgentEscrowsModule } from './agent-escrows.module';

/** HTTP routes of agent escrows. */
@Module({ imports: [AgentEscrowsModule], controllers: [AgentEscrowsController] })
export class AgentEscrowsHttpModule {}
