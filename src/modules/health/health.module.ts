import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { HealthController, RedisHealthIndicator } from './health.controller';

@Module({ imports: [TerminusModule], controllers: [HealthController], providers: [RedisHealthIndicator] })
export class HealthModule {}
