import { Module } from '@nestjs/common';
import { CheckoutModule } from '../checkout/checkout.module';
import { EscrowModule } from '../escrow/escrow.module';
import { OrgsModule } from '../orgs/orgs.module';
import { PayPageController } from './pay-page.controller';
import { InvoicesModule } from '../invoices/invoices.module';
import { InvoicePageController } from './invoice-page.controller';

@Module({ imports: [CheckoutModule, EscrowModule, OrgsModule, InvoicesModule], controllers: [PayPageController, InvoicePageController] })
export class PayPageModule {}
