import { BullModule } from '@nestjs/bullmq';
import { NO_FAULTS } from '../../common/faults/faults';
import { Module } from '@nestjs/common';
import { QueueModule } from '../../common/queue/queue.module';
import { ChainModule } from '../chain.module';
import { RELAYER_QUEUE } from './relayer.queue';
import { RelayerRepository } from './relayer.repository';
import { RelayerFaults, RelayerSender } from './relayer-sender.service';
import { RelayerService } from './relayer.service';
import { RelayerTender } from './relayer-tender.service';
import { RelayIntentChecks } from './relay-intent-check';

/**
 * The relayer queue's producer side and the shared chain access (docs/architecture.md §5): any
 * process may relay; only the worker registers the processor (RelayerWorkerModule).
 */
@Module({
  imports: [ChainModule, QueueModule, BullModule.registerQueue({ name: RELAYER_QUEUE })],
  providers: [RelayIntentChecks, RelayerRepository, RelayerSender, RelayerTender, { provide: RelayerFaults, useValue: NO_FAULTS }, RelayerService],
  exports: [ChainModule, RelayIntentChecks, RelayerRepository, RelayerService, RelayerSender, RelayerTender, RelayerFaults, BullModule],
})
export class RelayerModule {}
