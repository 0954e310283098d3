import { Module } from '@nestjs/common';
import { OrgsModule } from '../orgs/orgs.module';
import { ConsoleSessionController } from './console-session.controller';
import { ConsoleModule } from './console.module';

/** The console's routes and pages on the api port (api only, docs/architecture.md §19). */
@Module({
  imports: [ConsoleModule, OrgsModule],
  controllers: [ConsoleSessionController],
})
export class ConsoleHttpModule {}
