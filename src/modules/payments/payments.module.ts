import { Module } from '@nestjs/common';
import { VerificationModule } from '../verification/verification.module';
import { IdempotencyRepository } from '../../common/idempotency/idempotency.repository';
import { AgentsModule } from '../agents/agents.module';
import { MandatesModule } from '../mandates/mandates.module';
import { RelayerModule } from '../relayer/relayer.module';
import { PaymentSettlement } from './payment-settlement.service';
import { PaymentsRepository } from './payments.repository';
import { PaymentFaults, PaymentsService } from './payments.service';

/** Agent payments: reservation, signing, relaying and settlement (docs/architecture.md §13). No controllers. */
@Module({
  imports: [AgentsModule, RelayerModule, VerificationModule, MandatesModule],
  providers: [PaymentsRepository, PaymentsService, PaymentSettlement, PaymentFaults, IdempotencyRepository],
  exports: [PaymentsService, PaymentSettlement, PaymentFaults],
})
export class PaymentsModule {}
