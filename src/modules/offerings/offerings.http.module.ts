import { Module } from '@nestjs/common';
import { OfferingsController } from './offerings.controller';
import { OfferingsModule } from './offerings.module';

/** The offerings REST routes; imported by the api process only. */
@Module({ imports: [OfferingsModule], controllers: [OfferingsController] })
export class OfferingsHttpModule {}
