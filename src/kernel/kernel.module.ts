import { DynamicModule, Global, Module, Type } from '@nestjs/common';
import { IdempotencyModule } from './idempotency/idempotency.module';
import { AuthFailureLimiter } from './rate-limit/auth-failure.limiter';
import { OperatorCredential } from './auth/operator-credential';
import { RateLimitStorageModule } from './rate-limit/redis-throttler.storage';
import { Authenticator } from './authenticator';
import { RateLimiter } from './rate-limit/rate-limiter';
import { Runner } from './runner';

/**
 * The capability kernel (DESIGN §17) of the api process: the one authenticator, the per-credential
 * rate limit, the failed-authentication allowance and the runner over the one idempotency service.
 * Global, so every transport (the REST guards and interceptor, MCP, A2A) injects the same instances.
 *
 * The kernel names no domain: the module that resolves credentials (exports a
 * {@link PrincipalResolver}, {@link CredentialCache} and {@link CredentialRevocations}; the orgs
 * module) is handed in by the composition root, `KernelModule.forRoot({ credentials: OrgsModule })`,
 * so the arrows run from the domains down to the kernel only (STYLE.md, "Layout").
 */
@Global()
@Module({})
export class KernelModule {
  /**
   * @param options.credentials the module exporting the credential resolver (a port of `kernel/auth/principal.ts`).
   * @param options.sessions the module exporting the {@link SessionAuthenticator} (console sessions), when the process has one.
   */
  static forRoot(options: { credentials: Type<unknown>; sessions?: Type<unknown> }): DynamicModule {
    return {
      module: KernelModule,
      global: true,
      imports: [options.credentials, ...(options.sessions ? [options.sessions] : []), IdempotencyModule, RateLimitStorageModule],
      providers: [Authenticator, RateLimiter, Runner, AuthFailureLimiter, OperatorCredential],
      exports: [Authenticator, RateLimiter, Runner, AuthFailureLimiter, OperatorCredential, IdempotencyModule],
    };
  }
}
