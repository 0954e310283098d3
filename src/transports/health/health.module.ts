import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { ReconciliationModule } from '../../chain/reconciliation/reconciliation.module';
import { ReconciliationHealthIndicator } from '../../chain/reconciliation/reconciliation.health';
import { RelayerModule } from '../../chain/relayer/relayer.module';
import { HealthController, RedisHealthIndicator, RelayerHealthIndicator } from './health.controller';

@Module({
  imports: [TerminusModule, RelayerModule, ReconciliationModule],
  controllers: [HealthController],
  providers: [RedisHealthIndicator, RelayerHealthIndicator, ReconciliationHealthIndicator],
})
export class HealthModule {}
