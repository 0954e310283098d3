import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { NO_FAULTS } from '../../common/faults/faults';
import { PaymentsModule } from '../../modules/payments/payments.module';
import { RelayerModule } from '../../chain/relayer/relayer.module';
import { X402Settlement } from './x402-settlement.entity';
import { X402Faults, X402Settlements } from './x402-settlements.service';
import { X402Repository } from './x402.repository';

/** Settlement of x402 payments for our own challenges (docs/architecture.md §14, §18), for the api and the worker's sweep. */
@Module({
  imports: [TypeOrmModule.forFeature([X402Settlement]), PaymentsModule, RelayerModule],
  providers: [X402Repository, X402Settlements, { provide: X402Faults, useValue: NO_FAULTS }],
  exports: [X402Settlements, X402Faults],
})
export class X402Module {}
