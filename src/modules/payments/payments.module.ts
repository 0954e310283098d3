import { Module } from '@nestjs/common';
import { NO_FAULTS } from '../../common/faults/faults';
import { VerificationModule } from '../verification/verification.module';
import { AgentsModule } from '../agents/agents.module';
import { MandatesModule } from '../mandates/mandates.module';
import { OrgsModule } from '../orgs/orgs.module';
import { RelayerModule } from '../../chain/relayer/relayer.module';
import { BalanceModule } from '../balance/balance.module';
import { PaymentSettlement } from './payment-settlement.service';
import { PaymentsRepository } from './payments.repository';
import { PaymentsAgentUsage, PaymentsMandateUsage, PaymentsOfCheckout } from './payment-ports.service';
import { CheckoutPaymentsSource } from '../checkout/checkout-payments.port';
import { MandateUsageSource } from '../mandates/mandate-usage.port';
import { AgentUsageSource } from '../agents/agent-usage.port';
import { AgentStopsModule } from './agent-stops.module';
import { PaymentsOperations } from './payments.operations';
import { PaymentFaults, PaymentsService } from './payments.service';
import { PaymentModes } from './payment-modes';
import { TransferPaymentMode } from './transfer-payment-mode';
import { PaymentRelayCheckModule } from './authorization-relay-check';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Payment } from './payment.entity';
import { X402Settlement } from './x402-settlement.entity';
import { X402Faults, X402Settlements } from './x402-settlements.service';
import { X402SettlementsRepository } from './x402-settlements.repository';

/**
 * Agent payments: reservation, signing, relaying and settlement (docs/architecture.md §13), and the
 * settlement record of paid retries of our own x402 challenges (§14, §18: table x402_settlements,
 * settled by the same USDC authorization indexer). No controllers. Provides the payment mode table
 * (PaymentModes) with the transfer modes instant, x402 and a2a; AgentEscrowsModule provides `escrow`,
 * and a process holding this module refuses to start without it (issue 28).
 */
@Module({
  imports: [TypeOrmModule.forFeature([Payment, X402Settlement]), PaymentRelayCheckModule, AgentsModule, AgentStopsModule, RelayerModule, VerificationModule, MandatesModule, BalanceModule, OrgsModule],
  providers: [
    PaymentsRepository,
    PaymentsAgentUsage,
    { provide: AgentUsageSource, useExisting: PaymentsAgentUsage },
    PaymentsMandateUsage,
    { provide: MandateUsageSource, useExisting: PaymentsMandateUsage },
    PaymentsOfCheckout,
    { provide: CheckoutPaymentsSource, useExisting: PaymentsOfCheckout },
    PaymentModes,
    TransferPaymentMode,
    PaymentsService,
    PaymentsOperations,
    PaymentSettlement,
    { provide: PaymentFaults, useValue: NO_FAULTS },
    X402SettlementsRepository,
    X402Settlements,
    { provide: X402Faults, useValue: NO_FAULTS },
  ],
  exports: [AgentUsageSource, MandateUsageSource, CheckoutPaymentsSource, PaymentModes, PaymentsService, PaymentsOperations, PaymentSettlement, PaymentFaults, X402Settlements, X402Faults],
})
export class PaymentsModule {}
