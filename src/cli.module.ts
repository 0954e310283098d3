import { Module } from '@nestjs/common';
import { CoreModule } from './core.module';
import { CheckoutModule } from './modules/checkout/checkout.module';
import { EscrowModule } from './modules/escrow/escrow.module';
import { OrgsModule } from './modules/orgs/orgs.module';
import { VerificationModule } from './modules/verification/verification.module';

/** Providers the operator CLI uses; the same modules as the api, without HTTP. */
@Module({ imports: [CoreModule, OrgsModule, CheckoutModule, EscrowModule, VerificationModule] })
export class CliModule {}
