import { Module } from '@nestjs/common';
import { CheckoutController } from './checkout.controller';
import { CheckoutMapper } from './checkout.mapper';
import { CheckoutRepository } from './checkout.repository';
import { CheckoutService } from './checkout.service';
import { WebhookUrlModule } from '../webhooks/webhooks.module';
import { OfferingsModule } from '../offerings/offerings.module';
import { CheckoutHooks } from './checkout-hooks.service';

@Module({
  imports: [WebhookUrlModule, OfferingsModule],
  controllers: [CheckoutController],
  providers: [CheckoutRepository, CheckoutService, CheckoutMapper, CheckoutHooks],
  exports: [CheckoutService, CheckoutMapper, CheckoutHooks],
})
export class CheckoutModule {}
