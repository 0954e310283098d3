import { DynamicModule, Module } from '@nestjs/common';
import type { SecretName } from './config/secrets';
import { CoreModule } from './core.module';
import { CheckoutModule } from './modules/checkout/checkout.module';
import { EscrowModule } from './modules/escrow/escrow.module';
import { OrgsModule } from './modules/orgs/orgs.module';
import { AgentsModule } from './modules/agents/agents.module';
import { MandatesModule } from './modules/mandates/mandates.module';
import { AgentStopsModule } from './modules/payments/agent-stops.module';
import { RelayerModule } from './chain/relayer/relayer.module';
import { VerificationModule } from './modules/verification/verification.module';
import { InvoicesModule } from './modules/invoices/invoices.module';
import { ReconciliationModule } from './chain/reconciliation/reconciliation.module';
import { PaymentsModule } from './modules/payments/payments.module';
import { AgentEscrowsModule } from './modules/agent-escrows/agent-escrows.module';
import { RefundsModule } from './modules/refunds/refunds.module';

/**
 * Providers the operator CLI uses: the features' service modules, never their `*.http.module.ts`,
 * so the CLI's application context instantiates no controllers. Payments (with every payment mode's
 * handler, so agent escrows) and refunds are loaded for balance:reconcile (their ledger rules, run again on the chain, find Transfer logs without rows).
 * AgentStopsModule: pausing an agent or disabling its signer fails its unsigned payments in the payments module (AgentHooks).
 */
@Module({ imports: [OrgsModule, CheckoutModule, EscrowModule, AgentsModule, AgentStopsModule, RelayerModule, VerificationModule, InvoicesModule, MandatesModule, ReconciliationModule, PaymentsModule, AgentEscrowsModule, RefundsModule] })
export class CliModule {
  /** The CLI for one command, loading only the secrets that command uses (docs/architecture.md §10). */
  static forCommand(secrets: readonly SecretName[]): DynamicModule {
    return { module: CliModule, imports: [CoreModule.forProcess({ name: 'cli', secrets })] };
  }
}
