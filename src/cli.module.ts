import { Module } from '@nestjs/common';
import { CoreModule } from './core.module';
import { CheckoutModule } from './modules/checkout/checkout.module';
import { EscrowModule } from './modules/escrow/escrow.module';
import { OrgsModule } from './modules/orgs/orgs.module';

/**
 * Providers the operator CLI uses: the features' service modules, never their `*.http.module.ts`,
 * so the CLI's application context instantiates no controllers.
 */
@Module({ imports: [CoreModule, OrgsModule, CheckoutModule, EscrowModule] })
export class CliModule {}
