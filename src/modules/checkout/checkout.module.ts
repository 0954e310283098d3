import { Module } from '@nestjs/common';
import { CheckoutMapper } from './checkout.mapper';
import { CheckoutRepository } from './checkout.repository';
import { CheckoutOperations } from './checkout.operations';
import { CheckoutService } from './checkout.service';
import { VerificationModule } from '../verification/verification.module';
import { WebhookUrlModule } from '../webhooks/webhooks.module';
import { OfferingsModule } from '../offerings/offerings.module';
import { CheckoutHooks } from './checkout-hooks.service';
import { TypeOrmModule } from '@nestjs/typeorm';
import { CheckoutSession } from './checkout.entity';

/** Checkout sessions (services only; routes in CheckoutHttpModule). */
@Module({
  imports: [TypeOrmModule.forFeature([CheckoutSession]), WebhookUrlModule, VerificationModule, OfferingsModule],
  providers: [CheckoutRepository, CheckoutService, CheckoutOperations, CheckoutMapper, CheckoutHooks],
  exports: [CheckoutService, CheckoutOperations, CheckoutMapper, CheckoutHooks],
})
export class CheckoutModule {}
