import { Module } from '@nestjs/common';
import { IdempotencyRepository } from './idempotency.repository';
import { IdempotencyService } from './idempotency.service';
import { TypeOrmModule } from '@nestjs/typeorm';
import { IdempotencyRecord } from './idempotency-record.entity';

/** The idempotency domain service and its store (docs/architecture.md §5), for every transport: HTTP interceptor, MCP tools, A2A. */
@Module({
  imports: [TypeOrmModule.forFeature([IdempotencyRecord])],
  providers: [IdempotencyRepository, IdempotencyService],
  exports: [IdempotencyService, IdempotencyRepository],
})
export class IdempotencyModule {}
