import { Module } from '@nestjs/common';
import { EscrowModule } from '../escrow/escrow.module';
import { ReconciliationService } from './reconciliation.service';

/** Reconciliation of the ledger against the chain (DESIGN §18), for the worker's job, `cli reconcile` and /health/ready. */
@Module({
  imports: [EscrowModule],
  providers: [ReconciliationService],
  exports: [ReconciliationService],
})
export class ReconciliationModule {}
