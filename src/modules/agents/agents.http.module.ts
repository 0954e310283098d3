import { Module } from '@nestjs/common';
import { AgentsController } from './agents.controller';
import { AgentsModule } from './agents.module';

/** HTTP routes of agents: GET /agent, GET /balance and the owner-signed signer and withdraw routes. */
@Module({ imports: [AgentsModule], controllers: [AgentsController] })
export class AgentsHttpModule {}
