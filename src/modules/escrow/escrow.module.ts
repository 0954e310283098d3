import { Module, OnApplicationShutdown } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { CheckoutModule } from '../checkout/checkout.module';
import { OrgsModule } from '../orgs/orgs.module';
import { EscrowChainService } from './escrow-chain.service';
import { EscrowIndexer } from './escrow-indexer.service';
import { EscrowLedger } from './escrow-ledger.service';
import { CheckoutFundingController, EscrowController } from './escrow.controller';
import { EscrowMapper } from './escrow.mapper';
import { EscrowRepository } from './escrow.repository';
import { EscrowService } from './escrow.service';

@Module({
  imports: [CheckoutModule, OrgsModule],
  controllers: [EscrowController, CheckoutFundingController],
  providers: [EscrowRepository, EscrowChainService, EscrowLedger, EscrowMapper, EscrowService, EscrowIndexer],
  exports: [EscrowService, EscrowLedger, EscrowChainService, EscrowIndexer],
})
export class EscrowModule implements OnApplicationShutdown {
  constructor(private readonly moduleRef: ModuleRef) {}

  onApplicationShutdown(): void {
    this.moduleRef.get(EscrowChainService).destroy();
  }
}
