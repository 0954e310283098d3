import { ClsPluginTransactional } from '@nestjs-cls/transactional';
import { Global, Module } from '@nestjs/common';
import { getDataSourceToken, TypeOrmModule } from '@nestjs/typeorm';
import { ClsModule } from 'nestjs-cls';
import { AppConfig } from '../config/app-config';
import { ClusterLock } from './cluster-lock';
import { dataSourceOptions } from './data-source';
import { TypeOrmTxAdapter } from './transaction';

/**
 * TypeORM on Postgres (never `synchronize`) plus the CLS-held transaction that repositories,
 * the idempotency interceptor and the outbox share (docs/architecture.md §2), and the process's one
 * {@link ClusterLock} for background passes.
 */
@Global()
@Module({
  imports: [
    // Entities come from the domain modules' `TypeOrmModule.forFeature` (autoLoadEntities).
    TypeOrmModule.forRootAsync({ inject: [AppConfig], useFactory: (config: AppConfig) => ({ ...dataSourceOptions(config.env.DATABASE_URL), autoLoadEntities: true }) }),
    ClsModule.forRoot({
      global: true,
      // No per-request middleware: withTransaction opens its own CLS context, and outside one
      // repositories fall back to the default manager (one less cost on every request).
      plugins: [
        new ClsPluginTransactional({
          imports: [TypeOrmModule],
          adapter: new TypeOrmTxAdapter(getDataSourceToken()),
        }),
      ],
    }),
  ],
  providers: [{ provide: ClusterLock, inject: [AppConfig], useFactory: (config: AppConfig) => new ClusterLock(config.env.DATABASE_URL) }],
  exports: [ClusterLock],
})
export class DatabaseModule {}
