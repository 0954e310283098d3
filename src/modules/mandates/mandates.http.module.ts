import { Module } from '@nestjs/common';
import { MandatesController } from './mandates.controller';
import { MandatesModule } from './mandates.module';

/** HTTP routes of mandates: GET/POST /mandates, GET /mandates/{id}, POST /mandates/{id}/revoke. */
@Module({ imports: [MandatesModule], controllers: [MandatesController] })
export class MandatesHttpModule {}
