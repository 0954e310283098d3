import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsArray, IsIn, IsInt, IsOptional, IsString, Matches, MaxLength, MinLength, ValidateNested } from 'class-validator';

/** GET /console/api/nonce: a single-use SIWE nonce and what the message must name (EIP-4361). */
export class ConsoleNonceDto {
  @ApiProperty() nonce: string;
  @ApiProperty({ description: 'ISO time the nonce stops being accepted (5 minutes)' }) expiresAt: string;
  @ApiProperty({ description: 'SIWE domain (host of the api origin)' }) domain: string;
  @ApiProperty({ description: 'SIWE uri ({API origin}/console)' }) uri: string;
  @ApiProperty() chainId: number;
}

/** POST /console/api/sign-in: an EIP-4361 message and the wallet's personal_sign signature. */
export class SignInDto {
  @ApiProperty({ description: 'The EIP-4361 message as signed' }) @IsString() @MinLength(1) @MaxLength(4000) message: string;
  @ApiProperty({ description: '0x-prefixed EIP-191 signature' }) @IsString() @Matches(/^0x[0-9a-fA-F]{130}$/) signature: string;
}

export class ConsoleOrganizationDto {
  @ApiProperty() id: string;
  @ApiProperty() name: string;
  @ApiProperty() handle: string;
  @ApiProperty({ type: String, nullable: true }) payoutAddress: string | null;
}

/** The signed-in session: address, expiry, its CSRF token, and the organisations the address owns. */
export class ConsoleSessionDto {
  @ApiProperty() address: string;
  @ApiProperty() expiresAt: string;
  @ApiProperty({ description: 'Send as X-CSRF-Token on every console API request' }) csrfToken: string;
  @ApiProperty({ type: [ConsoleOrganizationDto] }) organizations: ConsoleOrganizationDto[];
}

/** POST /console/api/sign-out: the session is revoked. */
export class SignedOutDto {
  @ApiProperty() address: string;
  @ApiProperty({ enum: [true] }) signedOut: true;
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

/**
 * The agent owner's EIP-712 AgentConsent{agentId, action, payloadHash, nonce, deadline} signature
 * (DESIGN §19; docs/api.md "Agent owner consent"): the request's own agentId, action and payload fill in the rest.
 */
export class AgentConsentDto {
  @ApiProperty({ description: '32 bytes, 0x hex; single use' }) @Matches(/^0x[0-9a-fA-F]{64}$/) nonce: string;
  @ApiProperty({ description: 'Unix seconds; in the future, at most one hour ahead' }) @IsInt() deadline: number;
  @ApiProperty({ description: "EIP-712 signature by the agent's ownerAddress" }) @IsString() @MaxLength(200) signature: string;
}

/** POST /api/v1/agents/{id}/keys: agent scopes (empty = every agent scope), and the owner's consent when the key may spend. */
export class CreateAgentKeyDto {
  @ApiProperty({ type: [String], description: 'Agent scopes (empty = all agent scopes)' }) @IsArray() @IsString({ each: true }) scopes: string[];
  @ApiPropertyOptional({ type: AgentConsentDto, description: "Action create_pay_key over {scopes} (sorted): needed unless the session is the agent owner's, when the key may spend (agent:pay, agent:escrow:fund)" })
  @IsOptional()
  @ValidateNested()
  @Type(() => AgentConsentDto)
  consent?: AgentConsentDto;
}

/** POST /api/v1/agents/{id}/resume: the owner's consent, unless the session is the agent owner's. */
export class ResumeAgentDto {
  @ApiPropertyOptional({ type: AgentConsentDto, description: 'Action resume over {}' }) @IsOptional() @ValidateNested() @Type(() => AgentConsentDto) consent?: AgentConsentDto;
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

/** POST /api/v1/agents (console). */
export class CreateAgentDto {
  @ApiProperty({ description: '3–40 of a-z, 0-9 and -' }) @IsString() slug: string;
  @ApiPropertyOptional({ description: "The agent owner's address (signs EnableSigner, Withdraw and AgentConsent); default the signed-in address" }) @IsOptional() @IsString() ownerAddress?: string;
  @ApiPropertyOptional() @IsOptional() @IsString() @MaxLength(120) name?: string;
  @ApiPropertyOptional({ type: AgentConsentDto, description: 'AgentConsent by ownerAddress, action create_agent, agentId = the slug, over {organizationId, ownerAddress, slug}: needed when ownerAddress is not the signed-in address' })
  @IsOptional()
  @ValidateNested()
  @Type(() => AgentConsentDto)
  ownerProof?: AgentConsentDto;
}

/** PUT /api/v1/agents/{id}/policy (console): amounts decimal text; absent fields are unset. */
export class PolicyDto {
  @ApiPropertyOptional({ example: '25.00' }) @IsOptional() @IsString() perTransactionMax?: string;
  @ApiPropertyOptional({ example: '100.00' }) @IsOptional() @IsString() dailyLimit?: string;
  @ApiPropertyOptional() @IsOptional() @IsString() monthlyLimit?: string;
  @ApiPropertyOptional() @IsOptional() @IsString() approvalThreshold?: string;
  @ApiPropertyOptional({ type: [String] }) @IsOptional() @IsArray() @IsString({ each: true }) allowedRecipients?: string[];
  @ApiPropertyOptional({ enum: ['autonomous', 'mandate'] }) @IsOptional() @IsIn(['autonomous', 'mandate']) mode?: string;
  @ApiPropertyOptional() @IsOptional() @IsString() validFrom?: string;
  @ApiPropertyOptional() @IsOptional() @IsString() expiresAt?: string;
  @ApiPropertyOptional({ type: AgentConsentDto, description: 'Action raise_policy over the policy as the API renders it: needed to raise the policy unless the session is the agent owner\'s' })
  @IsOptional()
  @ValidateNested()
  @Type(() => AgentConsentDto)
  consent?: AgentConsentDto;
}
