import { Module } from '@nestjs/common';
import { AgentsModule } from '../agents/agents.module';
import { MandatesRepository } from './mandates.repository';
import { MandatesService } from './mandates.service';

/** AP2 intent mandates (docs/architecture.md §14): services only; routes in MandatesHttpModule. */
@Module({
  imports: [AgentsModule],
  providers: [MandatesRepository, MandatesService],
  exports: [MandatesService],
})
export class MandatesModule {}
