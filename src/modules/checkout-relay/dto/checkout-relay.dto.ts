import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsInt, IsString, Matches, Max, Min } from 'class-validator';

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const BYTES32 = /^0x[0-9a-fA-F]{64}$/;
const SIGNATURE = /^0x[0-9a-fA-F]{130}$/;
const UINT = /^(0|[1-9]\d{0,76})$/;

/** Query naming the funding wallet (`?buyer=`). */
export class BuyerQueryDto {
  @ApiProperty({ description: 'The buyer wallet that will sign', example: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8' })
  @IsString()
  @Matches(ADDRESS, { message: 'buyer must be a 0x-prefixed 20-byte hex address' })
  buyer: string;
}

/** Query naming the wallet that signs an escrow action (`?actor=`). */
export class ActorQueryDto {
  @ApiProperty({ description: 'The wallet that will sign the action (the escrow buyer)', example: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8' })
  @IsString()
  @Matches(ADDRESS, { message: 'actor must be a 0x-prefixed 20-byte hex address' })
  actor: string;
}

/** POST /checkout/{id}/relay: the buyer's signed EIP-3009 ReceiveWithAuthorization for the funding typed data. */
export class RelayFundingDto {
  @ApiProperty({ example: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8' })
  @IsString()
  @Matches(ADDRESS, { message: 'buyer must be a 0x-prefixed 20-byte hex address' })
  buyer: string;

  @ApiProperty({ description: 'Unix seconds, decimal text (as in the typed data)', example: '0' })
  @IsString()
  @Matches(UINT, { message: 'validAfter must be a whole number in decimal text' })
  validAfter: string;

  @ApiProperty({ description: 'Unix seconds, decimal text (as in the typed data)', example: '1795480000' })
  @IsString()
  @Matches(UINT, { message: 'validBefore must be a whole number in decimal text' })
  validBefore: string;

  @ApiProperty({ description: 'The typed data nonce (the funding terms digest), 0x + 64 hex' })
  @IsString()
  @Matches(BYTES32, { message: 'nonce must be 0x followed by 64 hex digits' })
  nonce: string;

  @ApiProperty({ description: '65-byte signature from eth_signTypedData_v4, 0x + 130 hex' })
  @IsString()
  @Matches(SIGNATURE, { message: 'signature must be 0x followed by 130 hex digits' })
  signature: string;
}

/** POST /checkout/{id}/actions: the buyer's signed EIP-712 EscrowAction (contract v2). */
export class RelayActionDto {
  @ApiProperty({ enum: ['release', 'dispute', 'cancel'] })
  @IsIn(['release', 'dispute', 'cancel'])
  action: 'release' | 'dispute' | 'cancel';

  @ApiProperty({ example: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8' })
  @IsString()
  @Matches(ADDRESS, { message: 'actor must be a 0x-prefixed 20-byte hex address' })
  actor: string;

  @ApiProperty({ description: 'The typed data nonce, 0x + 64 hex' })
  @IsString()
  @Matches(BYTES32, { message: 'nonce must be 0x followed by 64 hex digits' })
  nonce: string;

  @ApiProperty({ description: 'Unix seconds (as in the typed data)' })
  @IsInt()
  @Min(0)
  @Max(2 ** 40)
  deadline: number;

  @ApiProperty({ description: '65-byte signature, 0x + 130 hex' })
  @IsString()
  @Matches(SIGNATURE, { message: 'signature must be 0x followed by 130 hex digits' })
  signature: string;
}

export class CheckoutStateMerchantDto {
  @ApiProperty() name: string;
  @ApiProperty({ type: String, nullable: true }) handle: string | null;
}

export class CheckoutStateEscrowDto {
  @ApiProperty({ format: 'uuid' }) escrowId: string;
  @ApiProperty() status: string;
  @ApiProperty() buyer: string;
  @ApiProperty({ format: 'date-time' }) fundedAt: string;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) deliveredAt: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) inspectionEndsAt: string | null;
}

/** GET /checkout/{id}/state: what the pay page shows and may offer the buyer. */
export class CheckoutStateDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty() status: string;
  @ApiProperty({ description: 'USDC base units, decimal text', example: '25000000' }) amount: string;
  @ApiProperty({ example: 'USDC' }) currency: string;
  @ApiProperty({ example: '25.00' }) amountDecimal: string;
  @ApiProperty({ type: CheckoutStateMerchantDto }) merchant: CheckoutStateMerchantDto;
  @ApiProperty() description: string;
  @ApiProperty({ format: 'date-time' }) expiresAt: string;
  @ApiProperty({ type: String, nullable: true }) redirectUrl: string | null;
  @ApiProperty({ type: CheckoutStateEscrowDto, nullable: true }) escrow: CheckoutStateEscrowDto | null;
  @ApiProperty({ type: [String], enum: ['pay', 'release', 'dispute', 'cancel'] }) allowedActions: string[];
  @ApiProperty() chainId: number;
  @ApiProperty() usdcAddress: string;
  @ApiProperty() escrowAddress: string;
}

/** EIP-712 typed data ready for `eth_signTypedData_v4` (uint256 values as decimal text). */
export class TypedDataDto {
  @ApiProperty({ type: 'object', additionalProperties: true }) domain: Record<string, unknown>;
  @ApiProperty({ type: 'object', additionalProperties: true }) types: Record<string, unknown>;
  @ApiProperty() primaryType: string;
  @ApiProperty({ type: 'object', additionalProperties: true }) message: Record<string, unknown>;
}

export class FundingTypedDataDto {
  @ApiProperty({ type: TypedDataDto }) typedData: TypedDataDto;
  @ApiProperty({ type: 'object', additionalProperties: true, description: 'The signed funding terms (as GET /api/v1/checkout-sessions/{id}/funding-terms)' })
  terms: Record<string, unknown>;
}

export class ActionTypedDataDto {
  @ApiProperty({ type: TypedDataDto }) typedData: TypedDataDto;
}

/** A relayed funding: reserved → broadcast (hash known) → finished (the escrow is funded); or failed. */
export class RelayResultDto {
  @ApiProperty({ enum: ['reserved', 'broadcast', 'finished', 'failed'] }) status: string;
  @ApiPropertyOptional({ type: String, nullable: true }) txHash: string | null;
  @ApiPropertyOptional({ type: String, format: 'uuid', nullable: true, description: 'The escrow once the indexer recorded the funding' }) escrowId: string | null;
}

export class ActionResultDto {
  @ApiProperty({ enum: ['broadcast'] }) status: string;
  @ApiProperty() txHash: string;
}
