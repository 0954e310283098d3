import { Module } from '@nestjs/common';
import { A2aCardController, A2aRpcController } from './a2a.controller';
import { A2aModule } from './a2a.module';

/** `/api/v1/a2a/*` and the agent cards at `/.well-known/agent.json` and `/.well-known/agent-card.json`; api only (docs/architecture.md §1, §14). */
@Module({ imports: [A2aModule], controllers: [A2aCardController, A2aRpcController] })
export class A2aHttpModule {}
