import { Module } from '@nestjs/common';
import { AgentsModule } from '../agents/agents.module';
import { CheckoutModule } from '../checkout/checkout.module';
import { EscrowModule } from '../escrow/escrow.module';
import { PaymentsModule } from '../payments/payments.module';
import { RelayerModule } from '../../chain/relayer/relayer.module';
import { AgentEscrowsOperations } from './agent-escrows.operations';
import { AgentEscrowsService } from './agent-escrows.service';

/** Agent escrows (docs/architecture.md §13); registers the payment mode "escrow". No controllers. */
@Module({
  imports: [PaymentsModule, AgentsModule, CheckoutModule, EscrowModule, RelayerModule],
  providers: [AgentEscrowsService, AgentEscrowsOperations],
  exports: [AgentEscrowsService, AgentEscrowsOperations],
})
export class AgentEscrowsModule {}
