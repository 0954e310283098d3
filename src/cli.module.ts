import { Module } from '@nestjs/common';
import { CoreModule } from './core.module';
import { CheckoutModule } from './modules/checkout/checkout.module';
import { EscrowModule } from './modules/escrow/escrow.module';
import { OrgsModule } from './modules/orgs/orgs.module';
import { InvoicesModule } from './modules/invoices/invoices.module';

/** Providers the operator CLI uses; the same modules as the api, without HTTP (InvoicesModule: demo:pay applies escrow events that may pay an invoice). */
@Module({ imports: [CoreModule, OrgsModule, CheckoutModule, EscrowModule, InvoicesModule] })
export class CliModule {}
