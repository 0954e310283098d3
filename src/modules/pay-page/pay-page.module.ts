import { Module } from '@nestjs/common';
import { CheckoutModule } from '../checkout/checkout.module';
import { EscrowModule } from '../escrow/escrow.module';
import { OrgsModule } from '../orgs/orgs.module';
import { PayPageController } from './pay-page.controller';

@Module({ imports: [CheckoutModule, EscrowModule, OrgsModule], controllers: [PayPageController] })
export class PayPageModule {}
