import { Module } from '@nestjs/common';
import { PaymentsController } from './payments.controller';
import { PaymentsModule } from './payments.module';

/** HTTP routes of agent payments. */
@Module({ imports: [PaymentsModule], controllers: [PaymentsController] })
export class PaymentsHttpModule {}
