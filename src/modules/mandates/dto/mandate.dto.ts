import { ApiProperty } from '@nestjs/swagger';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsISO8601, IsObject, IsString, MaxLength, MinLength } from 'class-validator';
import { ListEnvelopeDto, ListQueryDto } from '../../../common/http/list.dto';


/** POST /api/v1/mandates (docs/architecture.md §14). Amounts are USDC decimal text, as POST /payments. */
export class CreateMandateDto {
  @ApiProperty({ type: [String], description: 'Payees covered: organisation handles, agent slugs or addresses', example: ['acme'] })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(100)
  @IsString({ each: true })
  @MinLength(1, { each: true })
  @MaxLength(64, { each: true })
  payees: string[];

  @ApiProperty({ description: 'USDC decimal text: the most one payment may be', example: '25.00' })
  @IsString()
  maxAmountPerPayment: string;

  @ApiProperty({ description: 'USDC decimal text: the most all payments under the mandate may add up to', example: '100.00' })
  @IsString()
  totalAmount: string;

  @ApiProperty({ format: 'date-time', description: 'RFC 3339; must be in the future' })
  @IsISO8601({ strict: true }, { message: 'expiresAt must be an RFC 3339 date-time' })
  expiresAt: string;

  @ApiProperty({ example: 'Office supplies for November' })
  @IsString()
  @MaxLength(500)
  description: string;

  @ApiProperty({ type: 'object', additionalProperties: true, description: 'The owner-signed credential (eip712 or sd-jwt), see docs/api.md "Mandates"' })
  @IsObject()
  credential: Record<string, unknown>;
}

/** An intent mandate; `usedAmount` is the sum of its pending, submitted and succeeded payments. */
export class MandateDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ type: [String] }) payees: string[];
  @ApiProperty({ example: '25.00' }) maxAmountPerPayment: string;
  @ApiProperty({ example: '100.00' }) totalAmount: string;
  @ApiProperty({ example: '40.00' }) usedAmount: string;
  @ApiProperty({ format: 'date-time' }) expiresAt: string;
  @ApiProperty() description: string;
  @ApiProperty({ enum: ['active', 'exhausted', 'expired', 'revoked'] }) status: string;
  @ApiProperty({ type: 'object', additionalProperties: true }) credential: Record<string, unknown>;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
}

export class MandateListDto extends ListEnvelopeDto {
  @ApiProperty({ type: [MandateDto] }) data: MandateDto[];
}

export class MandateListQueryDto extends ListQueryDto {}
