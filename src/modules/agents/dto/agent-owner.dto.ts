// The agent owner's console bodies (DESIGN §19): agent creation, policy, resume, agent keys and the owner's AgentConsent; with their operations in agents.operations.ts.
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsArray, IsIn, IsInt, IsOptional, IsString, Matches, MaxLength, ValidateNested } from 'class-validator';

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
