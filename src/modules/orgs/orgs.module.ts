import { Module } from '@nestjs/common';
import { CredentialCache, CredentialRevocations } from '../../common/auth/credential-cache';
import { PrincipalResolver } from '../../common/auth/principal';
import { OrgsRepository } from './orgs.repository';
import { OrgsService } from './orgs.service';

/** Organisations, keys, agents and OAuth clients (services only; routes in OrgsHttpModule). */
@Module({
  providers: [OrgsRepository, OrgsService, CredentialRevocations, CredentialCache, { provide: PrincipalResolver, useExisting: OrgsService }],
  exports: [OrgsService, PrincipalResolver, CredentialRevocations, CredentialCache],
})
export class OrgsModule {}
