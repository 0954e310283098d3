import { Module } from '@nestjs/common';
import { CoreModule } from './core.module';
import { CheckoutModule } from './modules/checkout/checkout.module';
import { EscrowModule } from './modules/escrow/escrow.module';
import { OrgsModule } from './modules/orgs/orgs.module';
import { AgentsModule } from './modules/agents/agents.module';
import { RelayerModule } from './modules/relayer/relayer.module';

/** Providers the operator CLI uses; the same modules as the api, without HTTP. */
@Module({ imports: [CoreModule, OrgsModule, CheckoutModule, EscrowModule, AgentsModule, RelayerModule] })
export class CliModule {}
