import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { RelayerModule } from '../../chain/relayer/relayer.module';
import { BalanceModule } from '../balance/balance.module';
import { CheckoutModule } from '../checkout/checkout.module';
import { EscrowModule } from '../escrow/escrow.module';
import { PaymentsModule } from '../payments/payments.module';
import { Refund } from './refund.entity';
import { RefundsOperations } from './refunds.operations';
import { RefundsRepository } from './refunds.repository';
import { RefundsService } from './refunds.service';
import { RefundSources } from './refund-sources';
import { RefundRelayCheckModule } from './refund-relay-check';

/** Refunds (DESIGN §21): services and operations only; routes in RefundsHttpModule, the watcher in RefundsWorkerModule. */
@Module({
  imports: [TypeOrmModule.forFeature([Refund]), RefundRelayCheckModule, RelayerModule, BalanceModule, PaymentsModule, CheckoutModule, EscrowModule],
  providers: [RefundsRepository, RefundSources, RefundsService, RefundsOperations],
  exports: [RefundsService, RefundsOperations],
})
export class RefundsModule {}
