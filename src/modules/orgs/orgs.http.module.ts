import { Module } from '@nestjs/common';
import { MeController, OAuthController } from './orgs.controller';
import { OrgsModule } from './orgs.module';

/** `GET /api/v1/me` and `POST /oauth/token`; api only (docs/architecture.md §1). */
@Module({ imports: [OrgsModule], controllers: [MeController, OAuthController] })
export class OrgsHttpModule {}
