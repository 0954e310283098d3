import { Module } from '@nestjs/common';
import { CheckoutModule } from '../checkout/checkout.module';
import { OrgsModule } from '../orgs/orgs.module';
import { RelayerModule } from '../../chain/relayer/relayer.module';
import { BalanceModule } from '../balance/balance.module';
import { EscrowChainService } from './escrow-chain.service';
import { EscrowIndexer } from './escrow-indexer.service';
import { EscrowProjector } from './escrow-projector.service';
import { EscrowMapper } from './escrow.mapper';
import { EscrowRepository } from './escrow.repository';
import { EscrowOperations } from './escrow.operations';
import { EscrowService } from './escrow.service';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Escrow, EscrowChainEventRow } from './escrow.entity';

/** Escrows, their chain gateway and indexer (services only; routes in EscrowHttpModule, jobs in EscrowJobsModule). */
@Module({
  imports: [TypeOrmModule.forFeature([Escrow, EscrowChainEventRow]), CheckoutModule, OrgsModule, RelayerModule, BalanceModule],
  providers: [EscrowRepository, EscrowChainService, EscrowProjector, EscrowMapper, EscrowService, EscrowOperations, EscrowIndexer],
  exports: [EscrowService, EscrowOperations, EscrowProjector, EscrowChainService, EscrowIndexer],
})
export class EscrowModule {}
