import { Module } from '@nestjs/common';
import { AgentsModule } from '../agents/agents.module';
import { MandatesRepository } from './mandates.repository';
import { MandatesService } from './mandates.service';
import { MandatesOperations } from './mandates.operations';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Mandate } from './mandate.entity';

/** AP2 intent mandates (docs/architecture.md §14). No controllers; payments use {@link MandatesService.cover}. */
@Module({
  imports: [TypeOrmModule.forFeature([Mandate]), AgentsModule],
  providers: [MandatesRepository, MandatesService, MandatesOperations],
  exports: [MandatesService, MandatesOperations],
})
export class MandatesModule {}
