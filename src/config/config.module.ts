import { DynamicModule, Global, Module } from '@nestjs/common';
import { AppConfig } from './app-config';
import type { ProcessSecrets } from './secrets';

/**
 * Provides the validated {@link AppConfig} for one process; constructing it fails fast on a bad
 * environment, including a missing or publicly known secret the process uses
 * (docs/architecture.md §10).
 */
@Global()
@Module({})
export class ConfigModule {
  static forProcess(process: ProcessSecrets): DynamicModule {
    return {
      module: ConfigModule,
      global: true,
      providers: [{ provide: AppConfig, useFactory: () => new AppConfig(globalThis.process.env, process) }],
      exports: [AppConfig],
    };
  }
}
