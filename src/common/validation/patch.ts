import { applyDecorators } from '@nestjs/common';
import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, Matches, IsString, ValidateIf } from 'class-validator';
import { AMOUNT_PATTERN } from '@lib/money';

/**
 * PATCH (JSON merge, RFC 7396) field that may be absent but never null: absent keeps the value,
 * `null` is refused by the validators that follow (docs/architecture.md §11: `null` clears only
 * optional fields).
 */
export const PresentNotNull = () => ValidateIf((_, v) => v !== undefined);

/** PATCH field that may be absent (keep) or `null` (clear); present values run the validators that follow. */
export const Clearable = () => IsOptional();

/** An amount in a PATCH body: absent keeps it, null is refused, otherwise decimal text as {@link IsAmount}. */
export const IsPatchAmount = (description = 'Amount in USDC as decimal text, e.g. "12.50" (max 6 decimals)') =>
  applyDecorators(
    ApiPropertyOptional({ type: String, example: '12.50', description, pattern: AMOUNT_PATTERN.source }),
    PresentNotNull(),
    IsString({ message: '$property must be a string of decimal text, e.g. "12.50"' }),
    Matches(AMOUNT_PATTERN, { message: '$property must be decimal text with at most 6 decimals, no sign, exponent or leading zeros' }),
    Matches(/[1-9]/, { message: '$property must be greater than 0' }),
  );
