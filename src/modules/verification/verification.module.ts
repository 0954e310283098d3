import { Module } from '@nestjs/common';
import { AppConfig } from '../../config/app-config';
import { OrgsModule } from '../orgs/orgs.module';
import { ChainModule } from '../../chain/chain.module';
import { VerificationSnapshotSource } from '../orgs/verification-snapshot.port';
import { IdentityProvider } from './identity-provider';
import { SandboxIdentityProvider } from './sandbox-identity.provider';
import { StripeIdentityProvider } from './stripe-identity.provider';
import { VerificationChain } from './verification-chain.service';
import { VerificationRepository } from './verification.repository';
import { VerificationService } from './verification.service';
import { TypeOrmModule } from '@nestjs/typeorm';
import { OrganizationVerification, VerificationWalletPayment } from './verification.entity';

/**
 * Business verification without transports (docs/architecture.md §12): the record, the wallet
 * check's chain reads, the identity provider chosen by `IDENTITY_PROVIDER`, and the service other
 * modules gate on (`assertNotRejected`). It provides {@link VerificationSnapshotSource}, which
 * `OrgsService.me` resolves at call time (orgs cannot import this module, which depends on orgs).
 * Controllers live in verification.http.module.ts.
 */
@Module({
  imports: [TypeOrmModule.forFeature([OrganizationVerification, VerificationWalletPayment]), OrgsModule, ChainModule],
  providers: [
    VerificationRepository,
    VerificationChain,
    VerificationService,
    {
      provide: IdentityProvider,
      inject: [AppConfig],
      useFactory: (config: AppConfig) => (config.env.IDENTITY_PROVIDER === 'stripe' ? new StripeIdentityProvider(config) : new SandboxIdentityProvider(config)),
    },
    { provide: VerificationSnapshotSource, useExisting: VerificationService },
  ],
  exports: [VerificationService, VerificationSnapshotSource],
})
export class VerificationModule {}
