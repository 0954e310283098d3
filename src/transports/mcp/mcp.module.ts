import { Module } from '@nestjs/common';
import { BalanceModule } from '../../modules/balance/balance.module';
import { MandatesModule } from '../../modules/mandates/mandates.module';
import { IdempotencyModule } from '../../kernel/idempotency/idempotency.module';
import { CheckoutModule } from '../../modules/checkout/checkout.module';
import { EscrowModule } from '../../modules/escrow/escrow.module';
import { OrgsModule } from '../../modules/orgs/orgs.module';
import { VerificationModule } from '../../modules/verification/verification.module';
import { WebhooksModule } from '../../modules/webhooks/webhooks.module';
import { OfferingsModule } from '../../modules/offerings/offerings.module';
import { InvoicesModule } from '../../modules/invoices/invoices.module';
import { AgentsModule } from '../../modules/agents/agents.module';
import { PaymentsModule } from '../../modules/payments/payments.module';
import { AgentEscrowsModule } from '../../modules/agent-escrows/agent-escrows.module';
import { RefundsModule } from '../../modules/refunds/refunds.module';
import { McpService } from './mcp.service';
import { TOOL_PROVIDERS } from './tools';

/**
 * The MCP server (docs/architecture.md §15): the svc_* tools over the feature modules' services.
 * Api-only; its HTTP side is mounted by src/app.factory.ts (mcp.http.ts), on MCP_PORT or under
 * the api port.
 */
@Module({
  imports: [IdempotencyModule, OrgsModule, CheckoutModule, EscrowModule, WebhooksModule, VerificationModule, OfferingsModule, InvoicesModule, AgentsModule, PaymentsModule, AgentEscrowsModule, MandatesModule, RefundsModule, BalanceModule],
  providers: [McpService, ...TOOL_PROVIDERS],
  exports: [McpService],
})
export class McpModule {}
