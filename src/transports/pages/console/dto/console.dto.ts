import { ApiProperty } from '@nestjs/swagger';
import { IsString, Matches, MaxLength, MinLength } from 'class-validator';
import { ConsoleOrganizationDto } from '../../../../modules/orgs/dto/owner.dto';

// The owner actions' bodies live with their operations in the orgs and agents domains (issue 31); re-exported for the console's routes.
export { AddOwnerDto, ApiKeyDto, ConsoleOrganizationDto, CreateApiKeyDto, CreatedApiKeyDto, CreatedOAuthClientDto, CreateOrganizationDto, OAuthClientDto, OwnerDto, PayoutProofDto } from '../../../../modules/orgs/dto/owner.dto';
export { AgentConsentDto, CreateAgentDto, CreateAgentKeyDto, PolicyDto, ResumeAgentDto } from '../../../../modules/agents/dto/agent-owner.dto';

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

