import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsDateString,
  IsEmail,
  IsIn,
  IsInt,
  IsObject,
  IsOptional,
  IsString,
  IsUUID,
  Matches,
  Max,
  MaxLength,
  Min,
  MinLength,
  ValidateNested,
} from 'class-validator';
import { AMOUNT_PATTERN } from '@lib/money';
import { ListEnvelopeDto, ListQueryDto } from '../../../common/http/list.dto';
import { Clearable, PresentNotNull } from '../../../common/validation/patch';
import { INVOICE_EMAIL_STATUSES, INVOICE_STATUSES } from '../invoices.entity';

export const MAX_LINE_ITEMS = 100;
export const MAX_LINE_QUANTITY = 10_000;

export class InvoiceCustomerDto {
  @ApiProperty({ minLength: 1, maxLength: 200, example: 'Ada Lovelace' })
  @IsString({ message: 'customer.name must be a string' })
  @MinLength(1, { message: 'customer.name must not be empty' })
  @MaxLength(200, { message: 'customer.name must be at most 200 characters' })
  name: string;

  @ApiProperty({ format: 'email', maxLength: 254, example: 'ada@example.com' })
  @IsString({ message: 'customer.email must be an email address' })
  @MaxLength(254, { message: 'customer.email must be at most 254 characters' })
  @IsEmail({}, { message: 'customer.email must be an email address' })
  email: string;
}

/** A line of a draft: an offering (description and unit price from it) or a free line (both given). */
export class InvoiceLineInputDto {
  @ApiPropertyOptional({ format: 'uuid', description: 'An active offering: description defaults to its name; unitAmount, if given, must equal its price' })
  @IsOptional()
  @IsUUID('all', { message: 'offeringId must be an offering id' })
  offeringId?: string;

  @ApiPropertyOptional({ minLength: 1, maxLength: 500, example: 'Logo design', description: 'Required without offeringId' })
  @IsOptional()
  @IsString({ message: 'description must be a string' })
  @MinLength(1, { message: 'description must not be empty' })
  @MaxLength(500, { message: 'description must be at most 500 characters' })
  description?: string;

  @ApiPropertyOptional({ minimum: 1, maximum: MAX_LINE_QUANTITY, default: 1, example: 2 })
  @IsOptional()
  @IsInt({ message: `quantity must be an integer from 1 to ${MAX_LINE_QUANTITY}` })
  @Min(1, { message: `quantity must be an integer from 1 to ${MAX_LINE_QUANTITY}` })
  @Max(MAX_LINE_QUANTITY, { message: `quantity must be an integer from 1 to ${MAX_LINE_QUANTITY}` })
  quantity?: number;

  @ApiPropertyOptional({ type: String, example: '0.125001', pattern: AMOUNT_PATTERN.source, description: 'Unit price, decimal USDC (up to 6 decimals); required without offeringId' })
  @IsOptional()
  @IsString({ message: 'unitAmount must be a string of decimal text, e.g. "12.50"' })
  @Matches(AMOUNT_PATTERN, { message: 'unitAmount must be decimal text with at most 6 decimals, no sign, exponent or leading zeros' })
  @Matches(/[1-9]/, { message: 'unitAmount must be greater than 0' })
  unitAmount?: string;
}

/** Body of POST /invoices: a draft (docs/architecture.md §11). */
export class CreateInvoiceDto {
  @ApiProperty({ type: InvoiceCustomerDto })
  @IsObject({ message: 'customer must be an object with name and email' })
  @ValidateNested()
  @Type(() => InvoiceCustomerDto)
  customer: InvoiceCustomerDto;

  @ApiProperty({
    type: [InvoiceLineInputDto],
    minItems: 1,
    maxItems: MAX_LINE_ITEMS,
    example: [
      { offeringId: '0193a5c2-7d4e-7b3a-9f10-2b8c1d4e5f60', quantity: 2 },
      { description: 'Rush fee', unitAmount: '49.99' },
    ],
  })
  @IsArray({ message: 'lineItems must be an array' })
  @ArrayMinSize(1, { message: 'lineItems must have at least one line' })
  @ArrayMaxSize(MAX_LINE_ITEMS, { message: `lineItems must have at most ${MAX_LINE_ITEMS} lines` })
  @ValidateNested({ each: true })
  @Type(() => InvoiceLineInputDto)
  lineItems: InvoiceLineInputDto[];

  @ApiPropertyOptional({ type: String, format: 'date-time', example: '2026-12-31T23:59:59.000Z' })
  @IsOptional()
  @IsDateString({ strict: true }, { message: 'dueAt must be an ISO-8601 timestamp' })
  dueAt?: string | null;

  @ApiPropertyOptional({ type: String, maxLength: 2000, example: 'Thank you for your business.' })
  @IsOptional()
  @IsString({ message: 'memo must be a string' })
  @MaxLength(2000, { message: 'memo must be at most 2000 characters' })
  memo?: string | null;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true, description: 'Up to 50 keys, 8 kB as JSON' })
  @IsOptional()
  @IsObject({ message: 'metadata must be a JSON object' })
  metadata?: Record<string, unknown> | null;
}

/** customer in a PATCH: each field absent keeps, never null. */
export class InvoiceCustomerPatchDto {
  @ApiPropertyOptional({ minLength: 1, maxLength: 200 })
  @PresentNotNull()
  @IsString({ message: 'customer.name must be a string' })
  @MinLength(1, { message: 'customer.name must not be empty' })
  @MaxLength(200, { message: 'customer.name must be at most 200 characters' })
  name?: string;

  @ApiPropertyOptional({ format: 'email', maxLength: 254 })
  @PresentNotNull()
  @IsString({ message: 'customer.email must be an email address' })
  @MaxLength(254, { message: 'customer.email must be at most 254 characters' })
  @IsEmail({}, { message: 'customer.email must be an email address' })
  email?: string;
}

/**
 * Body of PATCH /invoices/{id} (drafts only): JSON merge — absent keeps, `null` clears dueAt, memo
 * and metadata; customer merges field by field; lineItems, when present, replaces every line.
 */
export class UpdateInvoiceDto {
  @ApiPropertyOptional({ type: InvoiceCustomerPatchDto })
  @PresentNotNull()
  @IsObject({ message: 'customer must be an object' })
  @ValidateNested()
  @Type(() => InvoiceCustomerPatchDto)
  customer?: InvoiceCustomerPatchDto;

  @ApiPropertyOptional({ type: [InvoiceLineInputDto], minItems: 1, maxItems: MAX_LINE_ITEMS, description: 'Replaces all lines' })
  @PresentNotNull()
  @IsArray({ message: 'lineItems must be an array' })
  @ArrayMinSize(1, { message: 'lineItems must have at least one line' })
  @ArrayMaxSize(MAX_LINE_ITEMS, { message: `lineItems must have at most ${MAX_LINE_ITEMS} lines` })
  @ValidateNested({ each: true })
  @Type(() => InvoiceLineInputDto)
  lineItems?: InvoiceLineInputDto[];

  @ApiPropertyOptional({ type: String, format: 'date-time', nullable: true, description: 'null clears it' })
  @Clearable()
  @IsDateString({ strict: true }, { message: 'dueAt must be an ISO-8601 timestamp' })
  dueAt?: string | null;

  @ApiPropertyOptional({ type: String, nullable: true, maxLength: 2000, description: 'null clears it' })
  @Clearable()
  @IsString({ message: 'memo must be a string' })
  @MaxLength(2000, { message: 'memo must be at most 2000 characters' })
  memo?: string | null;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true, nullable: true, description: 'Merged key by key (RFC 7396); metadata: null clears all' })
  @Clearable()
  @IsObject({ message: 'metadata must be a JSON object' })
  metadata?: Record<string, unknown> | null;
}

/** Body of POST /invoices/{id}/send and /void: only the body form of the Idempotency-Key. */
export class InvoiceActionDto {
  @ApiPropertyOptional({ maxLength: 128, description: 'Body form of the Idempotency-Key header' })
  @IsOptional()
  @IsString()
  idempotencyKey?: string;
}

export class InvoiceLineItemDto {
  @ApiProperty({ example: 'Logo design' }) description: string;
  @ApiProperty({ example: 2 }) quantity: number;
  @ApiProperty({ example: '250.00', description: 'Unit price, decimal USDC' }) unitAmount: string;
  @ApiProperty({ example: '500.00', description: 'quantity × unitAmount' }) amount: string;
  @ApiProperty({ type: String, nullable: true, format: 'uuid' }) offeringId: string | null;
}

export class InvoiceEmailDto {
  @ApiProperty({ enum: INVOICE_EMAIL_STATUSES, description: 'pending: queued for the worker; skipped: SMTP_URL is not configured, nothing was emailed' })
  status: string;
  @ApiProperty({ example: 'ada@example.com' }) to: string;
  @ApiProperty({ type: String, nullable: true, example: 'smtp_not_configured' }) reason: string | null;
  @ApiProperty() attempts: number;
  @ApiProperty({ type: String, nullable: true }) lastError: string | null;
  @ApiProperty({ type: String, nullable: true, format: 'date-time' }) sentAt: string | null;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
}

/** An invoice as the API renders it (docs/architecture.md §11). */
export class InvoiceDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ type: String, nullable: true, example: 'INV-000042', description: 'Assigned at the first send' }) number: string | null;
  @ApiProperty({ enum: INVOICE_STATUSES }) status: string;
  @ApiProperty({ type: InvoiceCustomerDto }) customer: InvoiceCustomerDto;
  @ApiProperty({ type: [InvoiceLineItemDto] }) lineItems: InvoiceLineItemDto[];
  @ApiProperty({ example: '549.99', description: 'Σ line amounts, decimal USDC' }) amount: string;
  @ApiProperty({ enum: ['USDC'] }) currency: 'USDC';
  @ApiProperty({ type: String, nullable: true, format: 'date-time' }) dueAt: string | null;
  @ApiProperty({ type: String, nullable: true }) memo: string | null;
  @ApiProperty({ type: String, nullable: true, format: 'uri', example: 'https://pay.example.com/invoices/0193…' }) payUrl: string | null;
  @ApiProperty({ type: String, nullable: true, format: 'uuid', description: 'The checkout paying (or that paid) it' }) checkoutSessionId: string | null;
  @ApiProperty({ type: String, nullable: true, format: 'date-time', description: 'First send (finalisation)' }) sentAt: string | null;
  @ApiProperty({ type: String, nullable: true, format: 'date-time' }) paidAt: string | null;
  @ApiProperty({ type: String, nullable: true, format: 'date-time' }) voidedAt: string | null;
  @ApiProperty({ type: InvoiceEmailDto, nullable: true, description: 'The latest email to the customer' }) email: InvoiceEmailDto | null;
  @ApiProperty({ type: 'object', additionalProperties: true, nullable: true }) metadata: Record<string, unknown> | null;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiProperty({ format: 'date-time' }) updatedAt: string;
}

export class InvoiceListDto extends ListEnvelopeDto {
  @ApiProperty({ type: [InvoiceDto] }) data: InvoiceDto[];
}

/** Query of GET /invoices: the list parameters plus `status`. */
export class InvoiceListQueryDto extends ListQueryDto {
  @ApiPropertyOptional({ enum: INVOICE_STATUSES })
  @IsOptional()
  @IsIn(INVOICE_STATUSES, { message: `status must be one of ${INVOICE_STATUSES.join(', ')}` })
  status?: (typeof INVOICE_STATUSES)[number];
}
