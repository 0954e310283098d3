import { Module } from '@nestjs/common';
import { NO_FAULTS } from '../../common/faults/faults';
import { VerificationModule } from '../verification/verification.module';
import { AgentsModule } from '../agents/agents.module';
import { MandatesModule } from '../mandates/mandates.module';
import { RelayerModule } from '../../chain/relayer/relayer.module';
import { PaymentSettlement } from './payment-settlement.service';
import { PaymentsRepository } from './payments.repository';
import { PaymentsOperations } from './payments.operations';
import { PaymentFaults, PaymentsService } from './payments.service';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Payment } from './payment.entity';

/** Agent payments: reservation, signing, relaying and settlement (docs/architecture.md §13). No controllers. */
@Module({
  imports: [TypeOrmModule.forFeature([Payment]), AgentsModule, RelayerModule, VerificationModule, MandatesModule],
  providers: [PaymentsRepository, PaymentsService, PaymentsOperations, PaymentSettlement, { provide: PaymentFaults, useValue: NO_FAULTS }],
  exports: [PaymentsService, PaymentsOperations, PaymentSettlement, PaymentFaults],
})
export class PaymentsModule {}
