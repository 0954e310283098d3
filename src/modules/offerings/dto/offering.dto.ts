import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsBoolean, IsIn, IsObject, IsOptional, IsString, MaxLength, MinLength } from 'class-validator';
import { ListEnvelopeDto, ListQueryDto } from '../../../common/http/list.dto';
import { IsAmount } from '../../../common/validation/validators';
import { Clearable, IsPatchAmount, PresentNotNull } from '../../../common/validation/patch';
import { ESCROW_TEMPLATES } from '../escrow-templates';

const TEMPLATE_MESSAGE = `escrowTemplateId must be one of ${ESCROW_TEMPLATES.join(', ')}`;

/** An offering as the API renders it (docs/architecture.md §11). */
export class OfferingDto {
  @ApiProperty({ format: 'uuid', example: '0193a5c2-7d4e-7b3a-9f10-2b8c1d4e5f60' }) id: string;
  @ApiProperty({ example: 'Logo design' }) name: string;
  @ApiProperty({ type: String, nullable: true, example: 'Three concepts, two revision rounds' }) description: string | null;
  @ApiProperty({ example: '250.00', description: 'Unit price, decimal USDC' }) amount: string;
  @ApiProperty({ enum: ['USDC'] }) currency: 'USDC';
  @ApiProperty({ enum: ESCROW_TEMPLATES, example: 'freelance' }) escrowTemplateId: string;
  @ApiProperty({ description: 'false = archived: kept for history, refused for new checkouts and invoice lines' }) active: boolean;
  @ApiProperty({ type: 'object', additionalProperties: true, nullable: true, example: { sku: 'LOGO-1' } }) metadata: Record<string, unknown> | null;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ format: 'date-time' }) updatedAt: string;
}

export class OfferingListDto extends ListEnvelopeDto {
  @ApiProperty({ type: [OfferingDto] }) data: OfferingDto[];
}

/** Query of GET /offerings: the list parameters plus `active`. */
export class OfferingListQueryDto extends ListQueryDto {
  @ApiPropertyOptional({ enum: ['true', 'false'], description: 'Only active (true) or archived (false) offerings' })
  @IsOptional()
  @Transform(({ value }: { value: unknown }) => (value === 'true' ? true : value === 'false' ? false : value))
  @IsBoolean({ message: 'active must be true or false' })
  active?: boolean;
}

/** Body of POST /offerings. */
export class CreateOfferingDto {
  @ApiProperty({ minLength: 1, maxLength: 200, example: 'Logo design' })
  @IsString({ message: 'name must be a string' })
  @MinLength(1, { message: 'name must not be empty' })
  @MaxLength(200, { message: 'name must be at most 200 characters' })
  name: string;

  @ApiPropertyOptional({ type: String, maxLength: 1000, example: 'Three concepts, two revision rounds' })
  @IsOptional()
  @IsString({ message: 'description must be a string' })
  @MaxLength(1000, { message: 'description must be at most 1000 characters' })
  description?: string | null;

  @IsAmount('Unit price in USDC as decimal text, e.g. "250.00" (max 6 decimals)')
  amount: string;

  @ApiPropertyOptional({ enum: ESCROW_TEMPLATES, default: 'custom', description: 'Template of the checkouts sold from this offering' })
  @IsOptional()
  @IsIn(ESCROW_TEMPLATES, { message: TEMPLATE_MESSAGE })
  escrowTemplateId?: string;

  @ApiPropertyOptional({ default: true })
  @IsOptional()
  @IsBoolean({ message: 'active must be true or false' })
  active?: boolean;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true, description: 'Up to 50 keys, 8 kB as JSON', example: { sku: 'LOGO-1' } })
  @IsOptional()
  @IsObject({ message: 'metadata must be a JSON object' })
  metadata?: Record<string, unknown> | null;
}

/**
 * Body of PATCH /offerings/{id}: JSON merge (RFC 7396) — a field absent keeps its value, `null`
 * clears an optional field (description, metadata); name, amount, escrowTemplateId and active
 * cannot be null (docs/architecture.md §11). Changes bind later checkouts only.
 */
export class UpdateOfferingDto {
  @ApiPropertyOptional({ minLength: 1, maxLength: 200 })
  @PresentNotNull()
  @IsString({ message: 'name must be a string' })
  @MinLength(1, { message: 'name must not be empty' })
  @MaxLength(200, { message: 'name must be at most 200 characters' })
  name?: string;

  @ApiPropertyOptional({ type: String, nullable: true, maxLength: 1000, description: 'null clears it' })
  @Clearable()
  @IsString({ message: 'description must be a string' })
  @MaxLength(1000, { message: 'description must be at most 1000 characters' })
  description?: string | null;

  @IsPatchAmount('New unit price for later checkouts, decimal USDC')
  amount?: string;

  @ApiPropertyOptional({ enum: ESCROW_TEMPLATES })
  @PresentNotNull()
  @IsIn(ESCROW_TEMPLATES, { message: TEMPLATE_MESSAGE })
  escrowTemplateId?: string;

  @ApiPropertyOptional({ description: 'false archives the offering' })
  @PresentNotNull()
  @IsBoolean({ message: 'active must be true or false' })
  active?: boolean;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true, nullable: true, description: 'Merged key by key (RFC 7396): a key set to null is removed; metadata: null clears all' })
  @Clearable()
  @IsObject({ message: 'metadata must be a JSON object' })
  metadata?: Record<string, unknown> | null;
}
