import { Controller, Get, Header, Inject, Injectable } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { HealthCheck, HealthCheckService, HealthIndicatorService, TypeOrmHealthIndicator } from '@nestjs/terminus';
import Redis from 'ioredis';
import { OperatorRoute, Public } from '../../common/auth/auth.decorators';
import { REDIS } from '../../common/redis/redis.module';
import { metricsRegistry } from './metrics';

/** Redis readiness: answers PING within the client's timeout. */
@Injectable()
export class RedisHealthIndicator {
  constructor(
    @Inject(REDIS) private readonly redis: Redis,
    private readonly indicator: HealthIndicatorService,
  ) {}

  async isHealthy(key = 'redis') {
    const check = this.indicator.check(key);
    try {
      await this.redis.ping();
      return check.up();
    } catch (err) {
      return check.down({ message: (err as Error).message });
    }
  }
}

/** Liveness, readiness (Postgres and Redis) and Prometheus metrics (DESIGN §1). */
@ApiExcludeController()
@Controller()
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly db: TypeOrmHealthIndicator,
    private readonly redis: RedisHealthIndicator,
  ) {}

  @Get('health/live')
  @Public()
  live() {
    return { status: 'ok' };
  }

  @Get('health/ready')
  @Public()
  @HealthCheck()
  ready() {
    return this.health.check([() => this.db.pingCheck('database', { timeout: 2000 }), () => this.redis.isHealthy()]);
  }

  /** Behind OPERATOR_TOKEN on the api (the global auth guard); the worker's port is operator-only and has no auth guard. */
  @Get('metrics')
  @OperatorRoute()
  @Header('Content-Type', 'text/plain; version=0.0.4')
  metrics(): Promise<string> {
    return metricsRegistry.metrics();
  }
}
