import { Module } from '@nestjs/common';
import { AgentsModule } from '../../modules/agents/agents.module';
import { CheckoutModule } from '../../modules/checkout/checkout.module';
import { PaymentsModule } from '../../modules/payments/payments.module';
import { RelayerModule } from '../../chain/relayer/relayer.module';
import { A2aCardService } from './a2a-card.service';
import { A2aPaymentsService } from './a2a-payments.service';
import { A2aRpcService } from './a2a-rpc.service';
import { A2aTasksRepository } from './a2a-tasks.repository';
import { A2aTasksService } from './a2a-tasks.service';
import { A2aExecutor } from './a2a.executor';
import { A2aOperations } from './a2a.operations';
import { A2aTask } from './a2a-task.entity';
import { TypeOrmModule } from '@nestjs/typeorm';

/** A2A (docs/architecture.md §14): agent card, Postgres task store, executor, payment-submitted. No controllers. */
@Module({
  imports: [TypeOrmModule.forFeature([A2aTask]), PaymentsModule, AgentsModule, CheckoutModule, RelayerModule],
  providers: [A2aCardService, A2aTasksRepository, A2aTasksService, A2aPaymentsService, A2aOperations, A2aExecutor, A2aRpcService],
  exports: [A2aCardService, A2aTasksService, A2aPaymentsService, A2aRpcService],
})
export class A2aModule {}
