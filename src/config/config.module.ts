import { Global, Module } from '@nestjs/common';
import { AppConfig } from './app-config';

/** Provides the validated {@link AppConfig}; constructing it fails fast on a bad environment. */
@Global()
@Module({ providers: [{ provide: AppConfig, useFactory: () => new AppConfig() }], exports: [AppConfig] })
export class ConfigModule {}
