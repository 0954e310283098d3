import { Module } from '@nestjs/common';
import { PrincipalResolver } from '../../common/auth/principal';
import { OrgsRepository } from './orgs.repository';
import { OrgsService } from './orgs.service';

/** Organisations, keys, agents and OAuth clients (services only; routes in OrgsHttpModule). */
@Module({
  providers: [OrgsRepository, OrgsService, { provide: PrincipalResolver, useExisting: OrgsService }],
  exports: [OrgsService, PrincipalResolver],
})
export class OrgsModule {}
