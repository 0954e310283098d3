import { Global, Module } from '@nestjs/common';
import { FeesService } from './fees.service';

/** The one fee service (docs/architecture.md §6), global: every process quotes through it. No routes. */
@Global()
@Module({ providers: [FeesService], exports: [FeesService] })
export class FeesModule {}
