import { Module } from '@nestjs/common';
import { MandatesModule } from '../mandates/mandates.module';
import { IdempotencyModule } from '../../common/idempotency/idempotency.module';
import { CheckoutModule } from '../checkout/checkout.module';
import { EscrowModule } from '../escrow/escrow.module';
import { OrgsModule } from '../orgs/orgs.module';
import { VerificationModule } from '../verification/verification.module';
import { WebhooksModule } from '../webhooks/webhooks.module';
import { OfferingsModule } from '../offerings/offerings.module';
import { InvoicesModule } from '../invoices/invoices.module';
import { AgentsModule } from '../agents/agents.module';
import { PaymentsModule } from '../payments/payments.module';
import { AgentEscrowsModule } from '../agent-escrows/agent-escrows.module';
import { McpService } from './mcp.service';
import { TOOL_PROVIDERS } from './tools';

/**
 * The MCP server (docs/architecture.md §15): the svc_* tools over the feature modules' services.
 * Api-only; its HTTP side is mounted by src/app.factory.ts (mcp.http.ts), on MCP_PORT or under
 * the api port.
 */
@Module({
  imports: [IdempotencyModule, OrgsModule, CheckoutModule, EscrowModule, WebhooksModule, VerificationModule, OfferingsModule, InvoicesModule, AgentsModule, PaymentsModule, AgentEscrowsModule, MandatesModule],
  providers: [McpService, ...TOOL_PROVIDERS],
  exports: [McpService],
})
export class McpModule {}
