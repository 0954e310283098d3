import { Module } from '@nestjs/common';
import { CheckoutFundingController, EscrowController } from './escrow.controller';
import { EscrowModule } from './escrow.module';

/** `/api/v1/escrows/*` and `GET /api/v1/checkout-sessions/:id/funding-terms`; api only (docs/architecture.md §1). */
@Module({ imports: [EscrowModule], controllers: [EscrowController, CheckoutFundingController] })
export class EscrowHttpModule {}
