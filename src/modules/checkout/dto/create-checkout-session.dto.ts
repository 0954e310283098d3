import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsDateString, IsFQDN, IsIn, IsInt, IsObject, IsOptional, IsString, IsUUID, Max, MaxLength, Min, MinLength } from 'class-validator';
import { IsAmount, IsOptionalHttpUrl } from '../../../common/validation/validators';
import { ESCROW_TEMPLATES } from '../checkout.entity';
import type { EscrowTemplateId } from '../checkout.entity';

/** Body of POST /api/v1/checkout-sessions (docs/api.md "Body of POST /api/v1/checkout-sessions"). */
export class CreateCheckoutSessionDto {
  @IsAmount()
  amount: string;

  @ApiProperty({ minLength: 1, maxLength: 1000 })
  @IsString({ message: 'description must be a string' })
  @MinLength(1, { message: 'description must not be empty' })
  @MaxLength(1000, { message: 'description must be at most 1000 characters' })
  description: string;

  @IsOptionalHttpUrl('Where the pay page sends the buyer after funding')
  redirectUrl?: string;

  @IsOptionalHttpUrl('This session’s own webhook target, delivered to beside the organisation endpoint')
  webhookUrl?: string;

  @ApiPropertyOptional({ maxLength: 200 })
  @IsOptional()
  @IsString()
  @MaxLength(200)
  orderId?: string;

  @ApiPropertyOptional({ maxLength: 253, example: 'shop.example.com' })
  @IsOptional()
  @IsFQDN({ require_tld: false }, { message: 'shopDomain must be a domain name' })
  @MaxLength(253)
  shopDomain?: string;

  @ApiPropertyOptional({ enum: ESCROW_TEMPLATES, default: 'custom', description: 'Sets the inspection window after delivery (docs/architecture.md §7)' })
  @IsOptional()
  @IsIn(ESCROW_TEMPLATES, { message: `escrowTemplateId must be one of ${ESCROW_TEMPLATES.join(', ')}` })
  escrowTemplateId?: EscrowTemplateId;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    description: 'Up to 50 keys, 8 kB as JSON; for template custom, inspectionWindowHours (1–2160, default 168)',
  })
  @IsOptional()
  @IsObject({ message: 'metadata must be a JSON object' })
  metadata?: Record<string, unknown>;

  @ApiPropertyOptional({ description: 'When the session stops accepting payment: 30 min to 24 h from now (default 24 h)', format: 'date-time' })
  @IsOptional()
  @IsDateString({ strict: true }, { message: 'expiresAt must be an ISO-8601 timestamp' })
  expiresAt?: string;

  @ApiPropertyOptional({
    format: 'uuid',
    description: 'Sell an active offering: amount must equal its price × quantity; escrowTemplateId defaults to the offering\'s (docs/architecture.md §11)',
  })
  @IsOptional()
  @IsUUID('all', { message: 'offeringId must be an offering id' })
  offeringId?: string;

  @ApiPropertyOptional({ minimum: 1, maximum: 100, default: 1, description: 'Units of the offering (only with offeringId)' })
  @IsOptional()
  @IsInt({ message: 'quantity must be an integer from 1 to 100' })
  @Min(1, { message: 'quantity must be an integer from 1 to 100' })
  @Max(100, { message: 'quantity must be an integer from 1 to 100' })
  quantity?: number;

  @ApiPropertyOptional({ maxLength: 128, description: 'Body form of the Idempotency-Key header; both must agree when both are sent' })
  @IsOptional()
  @IsString()
  idempotencyKey?: string;
}
