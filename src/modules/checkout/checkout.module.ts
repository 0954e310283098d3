import { Module } from '@nestjs/common';
import { CheckoutMapper } from './checkout.mapper';
import { CheckoutRepository } from './checkout.repository';
import { CheckoutService } from './checkout.service';
import { VerificationModule } from '../verification/verification.module';
import { WebhookUrlModule } from '../webhooks/webhooks.module';

/** Checkout sessions (services only; routes in CheckoutHttpModule). */
@Module({
  imports: [WebhookUrlModule, VerificationModule],
  providers: [CheckoutRepository, CheckoutService, CheckoutMapper],
  exports: [CheckoutService, CheckoutMapper],
})
export class CheckoutModule {}
