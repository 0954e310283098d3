import { MiddlewareConsumer, Module, NestModule } from '@nestjs/common';
import { APP_FILTER, APP_GUARD, APP_INTERCEPTOR } from '@nestjs/core';
import { ThrottlerModule } from '@nestjs/throttler';
import { AppConfig } from './config/app-config';
import { AuthGuard } from './common/auth/auth.guard';
import { AllExceptionsFilter } from './common/errors/all-exceptions.filter';
import { IdempotencyInterceptor } from './common/idempotency/idempotency.interceptor';
import { IdempotencyRepository } from './common/idempotency/idempotency.repository';
import { RateLimitGuard } from './common/rate-limit/rate-limit.guard';
import { RateLimitStorageModule, RedisThrottlerStorage } from './common/rate-limit/redis-throttler.storage';
import { CoreModule } from './core.module';
import { CheckoutModule } from './modules/checkout/checkout.module';
import { EscrowModule } from './modules/escrow/escrow.module';
import { PayPageModule } from './modules/pay-page/pay-page.module';
import { HealthModule } from './modules/health/health.module';
import { HttpMetricsMiddleware } from './modules/health/metrics';
import { OrgsModule } from './modules/orgs/orgs.module';
import { WebhooksModule } from './modules/webhooks/webhooks.module';
import { OfferingsHttpModule } from './modules/offerings/offerings.http.module';
import { InvoicesHttpModule } from './modules/invoices/invoices.http.module';

/**
 * The api process (DESIGN §1–2): request id → auth guard → rate limit → idempotency →
 * validation → controller → service → repository, with one error filter.
 */
@Module({
  imports: [
    CoreModule,
    ThrottlerModule.forRootAsync({
      imports: [RateLimitStorageModule],
      inject: [AppConfig, RedisThrottlerStorage],
      useFactory: (config: AppConfig, storage: RedisThrottlerStorage) => ({
        throttlers: [
          {
            name: 'default',
            ttl: 60_000,
            limit: (ctx) =>
              (ctx.switchToHttp().getRequest() as { principal?: unknown }).principal
                ? config.env.RATE_LIMIT_PER_MINUTE
                : config.env.RATE_LIMIT_PUBLIC_PER_MINUTE,
          },
        ],
        storage,
        setHeaders: false,
        skipIf: (ctx) => {
          const url = ctx.switchToHttp().getRequest<{ url?: string }>().url ?? '';
          return url.startsWith('/health') || url === '/metrics';
        },
      }),
    }),
    HealthModule,
    OrgsModule,
    CheckoutModule,
    WebhooksModule,
    EscrowModule,
    PayPageModule,
    OfferingsHttpModule,
    InvoicesHttpModule,
  ],
  providers: [
    IdempotencyRepository,
    { provide: APP_GUARD, useClass: AuthGuard },
    { provide: APP_GUARD, useClass: RateLimitGuard },
    { provide: APP_INTERCEPTOR, useClass: IdempotencyInterceptor },
    { provide: APP_FILTER, useClass: AllExceptionsFilter },
  ],
})
export class ApiModule implements NestModule {
  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(HttpMetricsMiddleware).forRoutes('*path');
  }
}
