import { type MiddlewareConsumer, Module, type NestModule } from '@nestjs/common';
import { consolePageHeaders } from '../page-headers';
import { AgentsModule } from '../../../modules/agents/agents.module';
import { MandatesModule } from '../../../modules/mandates/mandates.module';
import { OrgsModule } from '../../../modules/orgs/orgs.module';
import { PaymentsModule } from '../../../modules/payments/payments.module';
import { ConsoleAdminController } from './console-admin.controller';
import { ConsolePagesController } from './console-pages.controller';
import { ConsoleSessionController } from './console-session.controller';
import { ConsoleModule } from './console.module';
import { ChainModule } from '../../../chain/chain.module';
import { PayoutProofService } from '../../../modules/orgs/payout-proof.service';
import { OrgsOperations } from '../../../modules/orgs/orgs.operations';
import { AgentsOperations } from '../../../modules/agents/agents.operations';

/** The console's routes and pages on the api port (api only, docs/architecture.md §19), with the orgs and agents domains' console operations they run; the pages' security headers are set by `helmet` ({@link consolePageHeaders}). */
@Module({
  imports: [ConsoleModule, OrgsModule, AgentsModule, PaymentsModule, MandatesModule, ChainModule],
  providers: [PayoutProofService, OrgsOperations, AgentsOperations],
  controllers: [ConsoleSessionController, ConsoleAdminController, ConsolePagesController],
})
export class ConsoleHttpModule implements NestModule {
  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(...consolePageHeaders).forRoutes(ConsolePagesController);
  }
}
