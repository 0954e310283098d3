import { type MiddlewareConsumer, Module, type NestModule } from '@nestjs/common';
import { hostedPageHeaders } from '../page-headers';
import { AgentsModule } from '../../../modules/agents/agents.module';
import { CheckoutModule } from '../../../modules/checkout/checkout.module';
import { EscrowModule } from '../../../modules/escrow/escrow.module';
import { OrgsModule } from '../../../modules/orgs/orgs.module';
import { VerificationModule } from '../../../modules/verification/verification.module';
import { PayPageController } from './pay-page.controller';
import { VerifyPageController } from './verify-page.controller';
import { InvoicesModule } from '../../../modules/invoices/invoices.module';
import { InvoicePageController } from './invoice-page.controller';
import { AgentSignerPageController } from './agent-signer-page.controller';
import { PageAssetsController } from './page-assets.controller';

/**
 * The hosted pages on the checkout host (api only, docs/architecture.md §1, §16): the pay page, the
 * invoice page, the sandbox identity page, the agent owner's signer page, and their one bundled script.
 * Every page answers with the strict CSP set by `helmet` ({@link hostedPageHeaders}).
 */
@Module({
  imports: [CheckoutModule, EscrowModule, OrgsModule, VerificationModule, InvoicesModule, AgentsModule],
  controllers: [PayPageController, VerifyPageController, InvoicePageController, AgentSignerPageController, PageAssetsController],
})
export class PayPageHttpModule implements NestModule {
  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(...hostedPageHeaders).forRoutes(PayPageController, VerifyPageController, InvoicePageController, AgentSignerPageController);
  }
}
