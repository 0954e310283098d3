import { Module } from '@nestjs/common';
import { EscrowModule } from '../escrow/escrow.module';
import { VerificationModule } from '../verification/verification.module';
import { CheckoutModule } from '../checkout/checkout.module';
import { OfferingsModule } from '../offerings/offerings.module';
import { OrgsModule } from '../orgs/orgs.module';
import { InvoiceMailer } from './invoice-mailer.service';
import { InvoicesRepository } from './invoices.repository';
import { InvoicesOperations } from './invoices.operations';
import { InvoicesService } from './invoices.service';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Invoice, InvoiceEmail } from './invoices.entity';

/**
 * Invoices: entity, repository, service and the email deliverer; no controllers (those are in
 * invoices.http.module.ts). Importing it registers the invoice's listener of checkout status
 * changes, so every process that applies escrow events (api, worker, cli) imports it.
 */
@Module({
  imports: [TypeOrmModule.forFeature([Invoice, InvoiceEmail]), CheckoutModule, OfferingsModule, OrgsModule, VerificationModule, EscrowModule],
  providers: [InvoicesRepository, InvoicesService, InvoicesOperations, InvoiceMailer],
  exports: [InvoicesService, InvoicesOperations, InvoiceMailer],
})
export class InvoicesModule {}
