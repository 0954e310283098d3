import { Module } from '@nestjs/common';
import { CheckoutModule } from '../checkout/checkout.module';
import { EscrowModule } from '../escrow/escrow.module';
import { OrgsModule } from '../orgs/orgs.module';
import { VerificationModule } from '../verification/verification.module';
import { PayPageController } from './pay-page.controller';
import { VerifyPageController } from './verify-page.controller';
import { InvoicesModule } from '../invoices/invoices.module';
import { InvoicePageController } from './invoice-page.controller';

/** The hosted pages on the checkout host (api only, docs/architecture.md §1, §16): the pay page, the invoice page and the sandbox identity page. */
@Module({
  imports: [CheckoutModule, EscrowModule, OrgsModule, VerificationModule, InvoicesModule],
  controllers: [PayPageController, VerifyPageController, InvoicePageController],
})
export class PayPageHttpModule {}
