import { Controller, Get, Header, Inject, Injectable, ServiceUnavailableException } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { HealthCheck, HealthCheckService, HealthIndicatorService, TypeOrmHealthIndicator } from '@nestjs/terminus';
import Redis from 'ioredis';
import { OperatorRoute, Public } from '../../kernel/auth/auth.decorators';
import { AppError } from '../../common/errors/app-error';
import { REDIS } from '../../common/redis/redis.module';
import { ReconciliationHealthIndicator } from '../../chain/reconciliation/reconciliation.health';
import { RelayerService } from '../../chain/relayer/relayer.service';
import { metricsRegistry } from '../../common/metrics';

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

/** Relayer readiness: its ETH balance is at least RELAYER_MIN_BALANCE (docs/architecture.md §5). */
@Injectable()
export class RelayerHealthIndicator {
  constructor(
    private readonly relayer: RelayerService,
    private readonly indicator: HealthIndicatorService,
  ) {}

  async isHealthy(key = 'relayer') {
    const check = this.indicator.check(key);
    try {
      const b = await this.relayer.balance();
      return b.ok ? check.up({ address: b.address, balance: b.balance }) : check.down({ address: b.address, balance: b.balance, message: 'relayer ETH below RELAYER_MIN_BALANCE' });
    } catch (err) {
      return check.down({ message: (err as Error).message });
    }
  }
}

/**
 * Liveness, readiness and Prometheus metrics (docs/architecture.md §1, DESIGN §23):
 * - `/health/live`: the process answers (liveness probe).
 * - `/health/serving`: PostgreSQL and Redis answer, all a replica needs to serve (readiness probe;
 *   docs/decisions.md "Kubernetes"). A node or relayer problem is the API's own 503 on the requests
 *   that need the chain, not every replica taken out of service.
 * - `/health/ready`: the full picture for dashboards and monitors: also the relayer's gas money and
 *   the last reconciliation.
 * Both readiness paths answer 503 `unavailable` with `details.checks` when a check is down.
 */
@ApiExcludeController()
@Controller()
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly db: TypeOrmHealthIndicator,
    private readonly redis: RedisHealthIndicator,
    private readonly relayer: RelayerHealthIndicator,
    private readonly reconciliation: ReconciliationHealthIndicator,
  ) {}

  @Get('health/live')
  @Public()
  live() {
    return { status: 'ok' };
  }

  @Get('health/serving')
  @Public()
  @HealthCheck()
  serving() {
    return this.report([() => this.db.pingCheck('database', { timeout: 2000 }), () => this.redis.isHealthy()]);
  }

  @Get('health/ready')
  @Public()
  @HealthCheck()
  ready() {
    return this.report([
      () => this.db.pingCheck('database', { timeout: 2000 }),
      () => this.redis.isHealthy(),
      () => this.relayer.isHealthy(),
      () => this.reconciliation.isHealthy(),
    ]);
  }

  /** Runs `checks`; any down → 503 `unavailable` (Retry-After 2) naming each check's state. */
  private async report(checks: Parameters<HealthCheckService['check']>[0]) {
    try {
      return await this.health.check(checks);
    } catch (err) {
      if (!(err instanceof ServiceUnavailableException)) throw err;
      // 503 (not the filter's generic 500), so load balancers take the replica out; only check names, states and our own messages.
      const report = err.getResponse() as { details?: Record<string, { status: string; message?: string }> };
      const states = Object.fromEntries(Object.entries(report.details ?? {}).map(([name, c]) => [name, name === 'relayer' || name === 'reconciliation' ? c : { status: c.status }]));
      throw new AppError('unavailable', 'Not ready', { checks: states }, 503, { 'Retry-After': '2' });
    }
  }

  /** Behind OPERATOR_TOKEN on the api (the global auth guard); the worker's port is operator-only and has no auth guard. */
  @Get('metrics')
  @OperatorRoute()
  @Header('Content-Type', 'text/plain; version=0.0.4')
  metrics(): Promise<string> {
    return metricsRegistry.metrics();
  }
}
