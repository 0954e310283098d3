import { Module } from '@nestjs/common';
import { APP_FILTER, APP_GUARD } from '@nestjs/core';
import { AuthGuard, CredentialConfirmGuard } from './kernel/auth/auth.guard';
import { AllExceptionsFilter } from './common/errors/all-exceptions.filter';
import { RateLimitGuard } from './kernel/rate-limit/rate-limit.guard';
import { KernelModule } from './kernel/kernel.module';
import { CoreModule } from './core.module';
import { PROCESS_SECRETS } from './config/secrets';
import { CheckoutHttpModule } from './modules/checkout/checkout.http.module';
import { EscrowHttpModule } from './modules/escrow/escrow.http.module';
import { FeesHttpModule } from './modules/fees/fees.http.module';
import { CheckoutRelayHttpModule } from './modules/checkout-relay/checkout-relay.http.module';
import { MandatesHttpModule } from './modules/mandates/mandates.http.module';
import { X402HttpModule } from './transports/x402/x402.http.module';
import { PayPageHttpModule } from './transports/pages/pay/pay-page.http.module';
import { HealthModule } from './transports/health/health.module';
import { McpModule } from './transports/mcp/mcp.module';
import { OrgsModule } from './modules/orgs/orgs.module';
import { OrgsHttpModule } from './modules/orgs/orgs.http.module';
import { WebhooksHttpModule } from './modules/webhooks/webhooks.http.module';
import { AgentsHttpModule } from './modules/agents/agents.http.module';
import { PaymentsHttpModule } from './modules/payments/payments.http.module';
import { AgentEscrowsHttpModule } from './modules/agent-escrows/agent-escrows.http.module';
import { VerificationHttpModule } from './modules/verification/verification.http.module';
import { OfferingsHttpModule } from './modules/offerings/offerings.http.module';
import { InvoicesHttpModule } from './modules/invoices/invoices.http.module';
import { A2aHttpModule } from './transports/a2a/a2a.http.module';
import { ConsoleModule } from './transports/pages/console/console.module';
import { ConsoleHttpModule } from './transports/pages/console/console.http.module';
import { RefundsHttpModule } from './modules/refunds/refunds.http.module';
import { BalanceHttpModule } from './modules/balance/balance.http.module';

/**
 * The api process (docs/architecture.md §1–2): request id → per-IP allowance of failed
 * authentications → auth guard → rate limit → idempotency → validation → controller → service
 * → repository, with one error filter. The only process that mounts the features' routes: each
 * feature's `<feature>.http.module.ts` (controllers over the feature's service module) is
 * imported here and nowhere else; MCP rides on the same services (McpModule).
 * OrgsModule is handed to the kernel for its PrincipalResolver, ConsoleModule for its SessionAuthenticator.
 */
@Module({
  imports: [
    CoreModule.forProcess({ name: 'api', secrets: PROCESS_SECRETS.api }),
    KernelModule.forRoot({ credentials: OrgsModule, sessions: ConsoleModule }),
    HealthModule,
    OrgsModule,
    FeesHttpModule,
    OrgsHttpModule,
    CheckoutHttpModule,
    WebhooksHttpModule,
    EscrowHttpModule,
    PayPageHttpModule,
    CheckoutRelayHttpModule,
    MandatesHttpModule,
    X402HttpModule,
    McpModule,
    AgentsHttpModule,
    PaymentsHttpModule,
    AgentEscrowsHttpModule,
    VerificationHttpModule,
    OfferingsHttpModule,
    InvoicesHttpModule,
    A2aHttpModule,
    ConsoleModule,
    ConsoleHttpModule,
    RefundsHttpModule,
    BalanceHttpModule,
  ],
  providers: [
    { provide: APP_GUARD, useClass: AuthGuard },
    { provide: APP_GUARD, useClass: RateLimitGuard },
    { provide: APP_GUARD, useClass: CredentialConfirmGuard }, // after the rate limit: see AuthGuard
    { provide: APP_FILTER, useClass: AllExceptionsFilter },
  ],
})
export class ApiModule {}
