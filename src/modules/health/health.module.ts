import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { RelayerModule } from '../relayer/relayer.module';
import { HealthController, RedisHealthIndicator, RelayerHealthIndicator } from './health.controller';

@Module({ imports: [TerminusModule, RelayerModule], controllers: [HealthController], providers: [RedisHealthIndicator, RelayerHealthIndicator] })
export class HealthModule {}
