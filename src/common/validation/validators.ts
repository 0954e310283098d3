import { applyDecorators } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, IsUrl, Matches, MaxLength, ValidateIf } from 'class-validator';
import { AMOUNT_PATTERN } from '@lib/money';

/**
 * A USDC amount as decimal text (docs/architecture.md §6): canonical form, > 0; the upper bound (MAX_AMOUNT)
 * is checked by the service, which has the configuration.
 */
export const IsAmount = (description = 'Amount in USDC as decimal text, e.g. "12.50" (max 6 decimals)') =>
  applyDecorators(
    ApiProperty({ type: String, example: '12.50', description, pattern: AMOUNT_PATTERN.source }),
    IsString({ message: '$property must be a string of decimal text, e.g. "12.50"' }),
    Matches(AMOUNT_PATTERN, { message: '$property must be decimal text with at most 6 decimals, no sign, exponent or leading zeros' }),
    Matches(/[1-9]/, { message: '$property must be greater than 0' }),
  );

/** An optional absolute http(s) URL of at most 2048 characters. */
export const IsOptionalHttpUrl = (description: string) =>
  applyDecorators(
    ApiPropertyOptional({ type: String, format: 'uri', description, maxLength: 2048 }),
    IsOptional(),
    ValidateIf((_, v) => v !== null),
    IsString({ message: '$property must be a URL string' }),
    MaxLength(2048),
    IsUrl({ protocols: ['http', 'https'], require_protocol: true, require_tld: false }, { message: '$property must be an absolute http(s) URL' }),
  );
