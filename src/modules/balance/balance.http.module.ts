import { Module } from '@nestjs/common';
import { BalanceController } from './balance.controller';
import { BalanceModule } from './balance.module';

/** The balance transaction routes; imported by the api process only. */
@Module({ imports: [BalanceModule], controllers: [BalanceController] })
export class BalanceHttpModule {}
