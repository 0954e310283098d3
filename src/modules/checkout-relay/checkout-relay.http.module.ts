import { Module } from '@nestjs/common';
import { CheckoutModule } from '../checkout/checkout.module';
import { EscrowModule } from '../escrow/escrow.module';
import { OrgsModule } from '../orgs/orgs.module';
import { RelayerModule } from '../../chain/relayer/relayer.module';
import { CheckoutRelayController } from './checkout-relay.controller';
import { CheckoutRelay } from './checkout-relay.entity';
import { TypeOrmModule } from '@nestjs/typeorm';
import { CheckoutRelayRepository } from './checkout-relay.repository';
import { CheckoutRelayService } from './checkout-relay.service';

/** The checkout host's JSON routes for the pay page (api only, docs/architecture.md §16). */
@Module({
  imports: [TypeOrmModule.forFeature([CheckoutRelay]), CheckoutModule, EscrowModule, OrgsModule, RelayerModule],
  controllers: [CheckoutRelayController],
  providers: [CheckoutRelayRepository, CheckoutRelayService],
  exports: [CheckoutRelayService, CheckoutRelayRepository],
})
export class CheckoutRelayHttpModule {}
