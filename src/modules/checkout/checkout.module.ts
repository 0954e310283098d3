import { Module } from '@nestjs/common';
import { CheckoutController } from './checkout.controller';
import { CheckoutMapper } from './checkout.mapper';
import { CheckoutRepository } from './checkout.repository';
import { CheckoutService } from './checkout.service';

@Module({
  controllers: [CheckoutController],
  providers: [CheckoutRepository, CheckoutService, CheckoutMapper],
  exports: [CheckoutService, CheckoutMapper],
})
export class CheckoutModule {}
