import { Module } from '@nestjs/common';
import { FeesController } from './fees.controller';

/** `GET /api/v1/fees/quote`; api only. FeesService comes from the global FeesModule (CoreModule). */
@Module({ controllers: [FeesController] })
export class FeesHttpModule {}
