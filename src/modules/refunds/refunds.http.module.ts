import { Module } from '@nestjs/common';
import { RefundsController } from './refunds.controller';
import { RefundsModule } from './refunds.module';

/** HTTP routes of refunds (DESIGN §21). */
@Module({ imports: [RefundsModule], controllers: [RefundsController] })
export class RefundsHttpModule {}
