import { ApiProperty } from '@nestjs/swagger';
import { IsBoolean, IsInt, IsString, Matches } from 'class-validator';

export class AgentSignerDto {
  @ApiProperty() enabled: boolean;
  @ApiProperty({ type: String, nullable: true, description: 'The session signer wallet (holds the float)' }) address: string | null;
}

export class AgentPolicyDto {
  @ApiProperty({ type: String, nullable: true, example: '50.00' }) perTransactionMax: string | null;
  @ApiProperty({ type: String, nullable: true, example: '100.00' }) dailyLimit: string | null;
  @ApiProperty({ type: String, nullable: true }) monthlyLimit: string | null;
  @ApiProperty({ type: String, nullable: true }) approvalThreshold: string | null;
  @ApiProperty({ type: [String], description: 'Handles, slugs or addresses; empty = any payee' }) allowedRecipients: string[];
  @ApiProperty({ enum: ['autonomous', 'mandate'] }) mode: string;
  @ApiProperty({ type: String, nullable: true, format: 'date-time' }) validFrom: string | null;
  @ApiProperty({ type: String, nullable: true, format: 'date-time' }) expiresAt: string | null;
}

export class AgentUsageDto {
  @ApiProperty({ example: '40.00', description: 'Payments pending, submitted or succeeded since 00:00 UTC' }) usedToday: string;
  @ApiProperty({ example: '120.00', description: 'The same since the 1st of the month, UTC' }) usedThisMonth: string;
}

/** GET /agent (docs/architecture.md §13). */
export class AgentDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty() slug: string;
  @ApiProperty({ type: String, nullable: true }) name: string | null;
  @ApiProperty({ format: 'uuid' }) organizationId: string;
  @ApiProperty() ownerAddress: string;
  @ApiProperty() paused: boolean;
  @ApiProperty() signer: AgentSignerDto;
  @ApiProperty({ type: AgentPolicyDto, nullable: true }) policy: AgentPolicyDto | null;
  @ApiProperty() usage: AgentUsageDto;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ format: 'date-time' }) updatedAt: string;
}

/** GET /balance. */
export class BalanceDto {
  @ApiProperty({ description: 'Session signer address' }) address: string;
  @ApiProperty({ example: '80.00', description: 'On-chain balance minus open (pending, submitted) payments' }) balance: string;
  @ApiProperty({ example: '100.00' }) onChainBalance: string;
  @ApiProperty() ownerAddress: string;
  @ApiProperty({ example: '900.00' }) ownerBalance: string;
  @ApiProperty({ enum: ['USDC'] }) currency: string;
}

/** An owner's single-use EIP-712 signature fields. */
class OwnerSignatureDto {
  @ApiProperty({ description: '32 random bytes, 0x hex, used once' })
  @IsString()
  @Matches(/^0x[0-9a-fA-F]{64}$/, { message: 'nonce must be 32 bytes of 0x hex' })
  nonce: string;

  @ApiProperty({ description: 'Unix seconds, at most one hour ahead' })
  @IsInt()
  deadline: number;

  @ApiProperty({ description: "The owner wallet's EIP-712 signature (0x hex)" })
  @IsString()
  @Matches(/^0x[0-9a-fA-F]+$/, { message: 'signature must be 0x hex' })
  signature: string;
}

/** POST /agents/{id}/signer: EnableSigner{agentId, signer, enabled, nonce, deadline} signed by the owner. */
export class EnableSignerDto extends OwnerSignatureDto {
  @ApiProperty() @IsBoolean() enabled: boolean;
}

/** POST /agents/{id}/withdraw: Withdraw{agentId, amount (base units), nonce, deadline} signed by the owner. */
export class WithdrawDto extends OwnerSignatureDto {
  @ApiProperty({ example: '25.00', description: 'USDC decimal text; the signed `amount` is its base units' })
  @IsString()
  amount: string;
}

export class EnableSignerResultDto {
  @ApiProperty() agent: AgentDto;
  @ApiProperty({ type: String, nullable: true, description: 'The sweep of the float back to the owner, when disabling' }) sweepTxHash: string | null;
}

export class WithdrawResultDto {
  @ApiProperty() txHash: string;
  @ApiProperty({ example: '25.00' }) amount: string;
  @ApiProperty() to: string;
}
