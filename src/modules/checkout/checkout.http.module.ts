import { Module } from '@nestjs/common';
import { CheckoutController } from './checkout.controller';
import { CheckoutModule } from './checkout.module';

/** `/api/v1/checkout-sessions` (create, list, retrieve); api only (docs/architecture.md §1). */
@Module({ imports: [CheckoutModule], controllers: [CheckoutController] })
export class CheckoutHttpModule {}
