import { Module } from '@nestjs/common';
import { OfferingsRepository } from './offerings.repository';
import { OfferingsService } from './offerings.service';

/** Offerings: entity, repository and service; no controllers (those are in offerings.http.module.ts). */
@Module({
  providers: [OfferingsRepository, OfferingsService],
  exports: [OfferingsService],
})
export class OfferingsModule {}
