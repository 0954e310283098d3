import { Module } from '@nestjs/common';
import { SessionAuthenticator } from '../../../kernel/auth/principal';
import { AuthFailureLimiter } from '../../../kernel/rate-limit/auth-failure.limiter';
import { OrgsModule } from '../../../modules/orgs/orgs.module';
import { ConsoleAuthService } from './console-auth.service';
import { ConsoleSessionAuthenticator } from './console-session.authenticator';
import { ConsoleRepository } from './console.repository';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ConsoleNonce, ConsoleSession } from './console.entity';

/**
 * Console sessions (docs/architecture.md §19): SIWE sign-in, server-side sessions, and the
 * {@link SessionAuthenticator} the api's auth guard uses to turn a session into a `console` principal.
 */
@Module({
  imports: [TypeOrmModule.forFeature([ConsoleNonce, ConsoleSession]), OrgsModule],
  providers: [ConsoleRepository, ConsoleAuthService, ConsoleSessionAuthenticator, AuthFailureLimiter, { provide: SessionAuthenticator, useExisting: ConsoleSessionAuthenticator }],
  exports: [ConsoleAuthService, SessionAuthenticator],
})
export class ConsoleModule {}
