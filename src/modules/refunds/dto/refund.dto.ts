import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsObject, IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { ListEnvelopeDto, ListQueryDto } from '../../../common/http/list.dto';
import { IsAmount } from '../../../common/validation/validators';
import { REFUND_SOURCE_TYPES, REFUND_STATUSES, type RefundSourceType, type RefundStatus } from '../refund.entity';

/** Body of POST /api/v1/{checkout-sessions|payments|x402-settlements}/{id}/refunds (DESIGN §21). */
export class CreateRefundDto {
  @IsAmount('Amount to give back in USDC as decimal text, e.g. "5.00"; with the other active refunds at most the amount received')
  amount: string;

  @ApiPropertyOptional({ maxLength: 500, description: 'Why the money goes back (free text, shown to you only)' })
  @IsOptional()
  @IsString({ message: 'reason must be a string' })
  @MaxLength(500, { message: 'reason must be at most 500 characters' })
  reason?: string;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true, description: 'Up to 50 keys, 8 kB as JSON' })
  @IsOptional()
  @IsObject({ message: 'metadata must be a JSON object' })
  metadata?: Record<string, unknown>;
}

/** Body of POST /api/v1/refunds/{id}/submit: exactly one of `signature` and `txHash` (DESIGN §21). */
export class SubmitRefundDto {
  @ApiPropertyOptional({ description: "The receiving wallet's EIP-712 signature of the refund's typedData (EIP-3009 TransferWithAuthorization); the relayer sends it gaslessly" })
  @IsOptional()
  @IsString({ message: 'signature must be a hex string' })
  @Matches(/^0x(?:[0-9a-fA-F]{2})+$/, { message: 'signature must be a 0x-prefixed hex string' })
  @MaxLength(20_000)
  signature?: string;

  @ApiPropertyOptional({ description: 'Hash of a USDC transfer you sent yourself (from the receiving address to the payer, exactly the amount)' })
  @IsOptional()
  @Matches(/^0x[0-9a-fA-F]{64}$/, { message: 'txHash must be a 0x-prefixed 32-byte hex string' })
  txHash?: string;
}

/** Query of GET /api/v1/refunds. */
export class RefundListQueryDto extends ListQueryDto {
  @ApiPropertyOptional({ enum: REFUND_STATUSES })
  @IsOptional()
  @IsIn(REFUND_STATUSES, { message: `status must be one of ${REFUND_STATUSES.join(', ')}` })
  status?: RefundStatus;
}

export class RefundSourceDto {
  @ApiProperty({ enum: REFUND_SOURCE_TYPES }) type: RefundSourceType;
  @ApiProperty({ format: 'uuid' }) id: string;
}

/** EIP-712 typed data of the refund's TransferWithAuthorization, as wallets' eth_signTypedData_v4 takes it (numbers as decimal strings). */
export class RefundTypedDataDto {
  @ApiProperty({ type: 'object', additionalProperties: true, description: "USDC's EIP-712 domain {name, version, chainId, verifyingContract}" })
  domain: Record<string, unknown>;
  @ApiProperty({ type: 'object', additionalProperties: true }) types: Record<string, Array<{ name: string; type: string }>>;
  @ApiProperty({ example: 'TransferWithAuthorization' }) primaryType: string;
  @ApiProperty({ type: 'object', additionalProperties: true, description: '{from, to, value (base units), validAfter, validBefore (unix s), nonce}' })
  message: Record<string, string>;
}

/** A refund (DESIGN §21). */
export class RefundDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ enum: REFUND_STATUSES }) status: RefundStatus;
  @ApiProperty({ example: '5.00' }) amount: string;
  @ApiProperty({ example: 'USDC' }) currency: 'USDC';
  @ApiProperty({ type: String, nullable: true }) reason: string | null;
  @ApiProperty({ type: 'object', additionalProperties: true, nullable: true }) metadata: Record<string, unknown> | null;
  @ApiProperty({ description: 'The address that received the money and sends it back' }) from: string;
  @ApiProperty({ description: 'The payer the money goes back to' }) to: string;
  @ApiProperty({ type: RefundSourceDto }) source: RefundSourceDto;
  @ApiPropertyOptional({ type: RefundTypedDataDto, nullable: true, description: 'What the receiving wallet signs (absent once refunded by txHash)' })
  typedData: RefundTypedDataDto | null;
  @ApiProperty({ type: String, nullable: true, description: 'The transfer that moved the money (or the relayed one, while pending)' }) txHash: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'Why it failed: expired, cancelled, reverted, reorged' }) failureReason: string | null;
  @ApiProperty({ description: 'When the signed authorization stops being usable (ISO-8601)' }) expiresAt: string;
  @ApiProperty() createdAt: string;
  @ApiProperty() updatedAt: string;
}

export class RefundListDto extends ListEnvelopeDto {
  @ApiProperty({ type: [RefundDto] }) data: RefundDto[];
}
