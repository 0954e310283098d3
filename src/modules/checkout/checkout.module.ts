import { Module } from '@nestjs/common';
import { CheckoutController } from './checkout.controller';
import { CheckoutMapper } from './checkout.mapper';
import { CheckoutRepository } from './checkout.repository';
import { CheckoutService } from './checkout.service';
import { VerificationModule } from '../verification/verification.module';
import { WebhookUrlModule } from '../webhooks/webhooks.module';

@Module({
  imports: [WebhookUrlModule, VerificationModule],
  controllers: [CheckoutController],
  providers: [CheckoutRepository, CheckoutService, CheckoutMapper],
  exports: [CheckoutService, CheckoutMapper],
})
export class CheckoutModule {}
