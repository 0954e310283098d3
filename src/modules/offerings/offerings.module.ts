import { Module } from '@nestjs/common';
import { OfferingsRepository } from './offerings.repository';
import { OfferingsOperations } from './offerings.operations';
import { OfferingsService } from './offerings.service';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Offering } from './offerings.entity';

/** Offerings: entity, repository and service; no controllers (those are in offerings.http.module.ts). */
@Module({
  imports: [TypeOrmModule.forFeature([Offering])],
  providers: [OfferingsRepository, OfferingsService, OfferingsOperations],
  exports: [OfferingsService, OfferingsOperations],
})
export class OfferingsModule {}
