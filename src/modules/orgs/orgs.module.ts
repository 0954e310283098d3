import { Module } from '@nestjs/common';
import { PrincipalResolver } from '../../common/auth/principal';
import { MeController, OAuthController } from './orgs.controller';
import { OrgsRepository } from './orgs.repository';
import { OrgsService } from './orgs.service';

@Module({
  controllers: [MeController, OAuthController],
  providers: [OrgsRepository, OrgsService, { provide: PrincipalResolver, useExisting: OrgsService }],
  exports: [OrgsService, PrincipalResolver],
})
export class OrgsModule {}
