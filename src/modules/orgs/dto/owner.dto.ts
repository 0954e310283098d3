// The console owner actions' bodies and views (DESIGN §19): owners, API keys, OAuth clients, self-serve organisations; with their operations in orgs.operations.ts.
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsArray, IsInt, IsOptional, IsString, MaxLength, MinLength, ValidateNested } from 'class-validator';

/** An organisation as the console shows it. */
export class ConsoleOrganizationDto {
  @ApiProperty() id: string;
  @ApiProperty() name: string;
  @ApiProperty() handle: string;
  @ApiProperty({ type: String, nullable: true }) payoutAddress: string | null;
}

/** POST /console/api/organizations: self-serve creation (docs/architecture.md §19). */
/** The payout address's signature over PayoutAddress (domain "Payments Control Plane Console", version 1, chainId). */
export class PayoutProofDto {
  @ApiProperty({ description: 'Unix seconds; in the future, at most one hour ahead' }) @IsInt() deadline: number;
  @ApiProperty() @IsString() @MaxLength(2000) signature: string;
}

export class CreateOrganizationDto {
  @ApiProperty() @IsString() @MinLength(1) @MaxLength(120) name: string;
  @ApiProperty({ description: '3–40 of a-z, 0-9 and -' }) @IsString() handle: string;
  @ApiPropertyOptional({ description: 'Defaults to the signed-in address' }) @IsOptional() @IsString() payoutAddress?: string;
  @ApiPropertyOptional({ type: PayoutProofDto, description: 'EIP-712 PayoutAddress{owner, handle, payoutAddress, deadline} signed by payoutAddress (EIP-1271 for a contract wallet); needed when it is not the signed-in address' })
  @IsOptional()
  @ValidateNested()
  @Type(() => PayoutProofDto)
  payoutProof?: PayoutProofDto;
}


export class OwnerDto {
  @ApiProperty() address: string;
  @ApiProperty() createdAt: string;
}

export class AddOwnerDto {
  @ApiProperty() @IsString() address: string;
}

/** POST /api/v1/api-keys (console): a merchant key; the secret is shown once. */
export class CreateApiKeyDto {
  @ApiProperty({ type: [String], description: 'Merchant scopes (X:read, X:write, X:*)' }) @IsArray() @IsString({ each: true }) scopes: string[];
}

export class ApiKeyDto {
  @ApiProperty() id: string;
  @ApiProperty({ enum: ['merchant', 'agent'] }) kind: string;
  @ApiProperty({ type: String, nullable: true }) agentId: string | null;
  @ApiProperty({ description: 'Shown prefix of the secret' }) prefix: string;
  @ApiProperty({ type: [String] }) scopes: string[];
  @ApiProperty() createdAt: string;
  @ApiProperty({ type: String, nullable: true }) revokedAt: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'When the key last authenticated a request, to the minute (stamped at most once a minute); null if never' }) lastUsedAt: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'Who created it: console:<address> or operator; null for keys created before this was recorded' }) createdBy: string | null;
}

export class CreatedApiKeyDto extends ApiKeyDto {
  @ApiProperty({ description: 'The secret, shown once' }) secret: string;
}

/** An OAuth client as the console lists it (never its secret). */
export class OAuthClientDto {
  @ApiProperty({ example: 'bac_…', description: 'The client_id of the client-credentials grant (POST /oauth/token)' }) clientId: string;
  @ApiProperty({ type: [String] }) scopes: string[];
  @ApiProperty() createdAt: string;
  @ApiProperty({ type: String, nullable: true }) revokedAt: string | null;
}

export class CreatedOAuthClientDto extends OAuthClientDto {
  @ApiProperty({ description: 'The client secret, shown once' }) clientSecret: string;
}

/** The list view of an API key (console, DESIGN §19): never its secret or digest. */
export function apiKeyView(k: { id: string; kind: string; agentId: string | null; displayPrefix: string; scopes: string[]; createdAt: Date; revokedAt: Date | null; lastUsedAt: Date | null; createdBy: string | null }): ApiKeyDto {
  return { id: k.id, kind: k.kind, agentId: k.agentId, prefix: k.displayPrefix, scopes: k.scopes, createdAt: k.createdAt.toISOString(), revokedAt: k.revokedAt?.toISOString() ?? null, lastUsedAt: k.lastUsedAt?.toISOString() ?? null, createdBy: k.createdBy ?? null };
}

/** The list view of an OAuth client (console, DESIGN §19): never its secret or digest. */
export function oauthClientView(c: { clientId: string; scopes: string[]; createdAt: Date; revokedAt: Date | null }): OAuthClientDto {
  return { clientId: c.clientId, scopes: c.scopes, createdAt: c.createdAt.toISOString(), revokedAt: c.revokedAt?.toISOString() ?? null };
}
