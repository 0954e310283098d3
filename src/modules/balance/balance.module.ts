import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ChainModule } from '../../chain/chain.module';
import { BalanceTransaction } from './balance-transaction.entity';
import { BalanceProjector } from './balance-projector.service';
import { BalanceReconciler } from './balance-reconciler.service';
import { BalanceRepository } from './balance.repository';
import { BalanceService } from './balance.service';

/**
 * The organisation's ledger (DESIGN §21): the table, its projector (written by the escrow and USDC
 * authorization indexers, which import this module) and the read service. Routes in BalanceHttpModule.
 */
@Module({
  imports: [TypeOrmModule.forFeature([BalanceTransaction]), ChainModule],
  providers: [BalanceRepository, BalanceProjector, BalanceService, BalanceReconciler],
  exports: [BalanceProjector, BalanceService, BalanceReconciler],
})
export class BalanceModule {}
