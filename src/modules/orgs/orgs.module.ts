import { Module } from '@nestjs/common';
import { CredentialCache, CredentialRevocations } from '../../kernel/auth/credential-cache';
import { PrincipalResolver } from '../../kernel/auth/principal';
import { OrgsRepository } from './orgs.repository';
import { OrgsService } from './orgs.service';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Organization, OrganizationOwner, ApiKey, OAuthClient, OAuthToken } from './orgs.entity';

/** Organisations, keys, agents and OAuth clients (services only; routes in OrgsHttpModule). */
@Module({
  imports: [TypeOrmModule.forFeature([Organization, OrganizationOwner, ApiKey, OAuthClient, OAuthToken])],
  providers: [OrgsRepository, OrgsService, CredentialRevocations, CredentialCache, { provide: PrincipalResolver, useExisting: OrgsService }],
  exports: [OrgsService, PrincipalResolver, CredentialRevocations, CredentialCache],
})
export class OrgsModule {}
