import { Global, Module } from '@nestjs/common';
import { IdempotencyModule } from '../common/idempotency/idempotency.module';
import { AuthFailureLimiter } from '../common/rate-limit/auth-failure.limiter';
import { RateLimitStorageModule } from '../common/rate-limit/redis-throttler.storage';
import { OrgsModule } from '../modules/orgs/orgs.module';
import { Authenticator } from './authenticator';
import { RateLimiter } from './rate-limit';
import { Runner } from './runner';

/**
 * The capability kernel (DESIGN §17) of the api process: the one authenticator, the per-credential
 * rate limit, the failed-authentication allowance and the runner over the one idempotency service.
 * Global, so every transport (the REST guards and interceptor, MCP, A2A) injects the same instances.
 */
@Global()
@Module({
  imports: [OrgsModule, IdempotencyModule, RateLimitStorageModule],
  providers: [Authenticator, RateLimiter, Runner, AuthFailureLimiter],
  exports: [Authenticator, RateLimiter, Runner, AuthFailureLimiter, IdempotencyModule],
})
export class KernelModule {}
