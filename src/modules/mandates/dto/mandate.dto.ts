import { ApiProperty } from '@nestjs/swagger';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsInt, IsISO8601, IsObject, IsString, Matches, MaxLength, MinLength } from 'class-validator';
import { ListEnvelopeDto } from '../../../common/http/list.dto';
import { IsAmount } from '../../../common/validation/validators';
import { MANDATE_STATUSES } from '../mandates.service';

/**
 * POST /mandates body (docs/architecture.md §14, §17): the terms, amounts as USDC decimal text,
 * and the owner-signed credential that states exactly these terms.
 */
export class CreateMandateDto {
  @ApiProperty({ type: [String], description: 'Payees covered: organisation handles, agent slugs or addresses (case-insensitive)', example: ['acme'] })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(100)
  @IsString({ each: true })
  @MinLength(1, { each: true })
  @MaxLength(128, { each: true })
  payees: string[];

  @IsAmount('Largest single payment, USDC decimal text (as signed in the credential), e.g. "20.00"')
  maxAmountPerPayment: string;

  @IsAmount('Budget over the mandate’s life, USDC decimal text, e.g. "100.00"')
  totalAmount: string;

  @ApiProperty({ format: 'date-time', description: 'ISO-8601; must be in the future and equal the signed value', example: '2026-12-31T00:00:00.000Z' })
  @IsString()
  @IsISO8601({ strict: true }, { message: 'expiresAt must be an ISO-8601 time' })
  expiresAt: string;

  @ApiProperty({ description: 'The intent in the owner’s words (signed)', example: 'API credits from acme' })
  @IsString()
  @MaxLength(1000)
  description: string;

  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    description:
      'Either {format: "eip712", domain: {name: "AP2 Intent Mandate", version: "0.1", chainId}, types: {IntentMandate: [agent string, payees string[], maxAmountPerPayment string, totalAmount string, currency string, expiresAt string, description string, nonce bytes32]}, primaryType: "IntentMandate", message, signature, signer, intentMandate} ' +
      '(message amounts as the same decimal text) or {format: "sd-jwt", token}: an AP2 v0.2 open payment mandate (vct mandate.payment.open.1) signed ES256K by the owner (iss did:pkh:eip155:<chainId>:<owner>, header jwk), claims sub = agent slug, jti = nonce, exp, description, constraints payment.allowed_payees / payment.amount_range / payment.budget in USDC base units.',
  })
  @IsObject()
  credential: Record<string, unknown>;
}

/** POST /mandates/{id}/revoke: RevokeMandate{mandateId, nonce, deadline} signed by the owner. */
export class RevokeMandateDto {
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

/** A mandate as the API renders it (docs/architecture.md §14). */
export class MandateDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ type: [String], description: 'Lower-cased' }) payees: string[];
  @ApiProperty({ example: '20.00', description: 'USDC decimal text' }) maxAmountPerPayment: string;
  @ApiProperty({ example: '100.00', description: 'USDC decimal text' }) totalAmount: string;
  @ApiProperty({ example: '0.00', description: 'Sum of the mandate’s pending, submitted and succeeded payments, USDC decimal text' }) usedAmount: string;
  @ApiProperty({ enum: ['USDC'] }) currency: string;
  @ApiProperty({ format: 'date-time' }) expiresAt: string;
  @ApiProperty() description: string;
  @ApiProperty({ enum: MANDATE_STATUSES }) status: string;
  @ApiProperty({ type: 'object', additionalProperties: true, description: 'The verified credential as submitted' }) credential: Record<string, unknown>;
  @ApiProperty({ type: String, format: 'date-time', nullable: true }) revokedAt: string | null;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ format: 'date-time' }) updatedAt: string;
}

export class MandateListDto extends ListEnvelopeDto {
  @ApiProperty({ type: [MandateDto] }) data: MandateDto[];
}
