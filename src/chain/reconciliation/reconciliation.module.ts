import { Module } from '@nestjs/common';
import { ChainModule } from '../chain.module';
import { ReconciliationRepository } from './reconciliation.repository';
import { ReconciliationService } from './reconciliation.service';

/** Reconciliation of the ledger against the chain (DESIGN §18), for the worker's job, `cli reconcile` and /health/ready. */
@Module({
  imports: [ChainModule],
  providers: [ReconciliationRepository, ReconciliationService],
  exports: [ReconciliationService],
})
export class ReconciliationModule {}
