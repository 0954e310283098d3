import { Module } from '@nestjs/common';
import { InvoicesController } from './invoices.controller';
import { InvoicesModule } from './invoices.module';

/** The invoices REST routes; imported by the api process only. */
@Module({ imports: [InvoicesModule], controllers: [InvoicesController] })
export class InvoicesHttpModule {}
