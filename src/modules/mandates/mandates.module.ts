import { Module } from '@nestjs/common';
import { MandatesRepository } from './mandates.repository';
import { MandatesService } from './mandates.service';

/** AP2 intent mandates (docs/architecture.md §14). No controllers; payments use {@link MandatesService.cover}. */
@Module({
  providers: [MandatesRepository, MandatesService],
  exports: [MandatesService],
})
export class MandatesModule {}
