import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ERROR_CODES } from './app-error';
import type { ErrorCode } from './app-error';

/** The error body of docs/api.md "Errors". */
export class ErrorBody {
  @ApiProperty({ example: 'amount must be a decimal string with at most 6 decimals, e.g. "12.50"' })
  error: string;
  @ApiProperty({ enum: ERROR_CODES, example: 'invalid_request' })
  code: ErrorCode;
  @ApiProperty({ example: 'req_0193a0f2-5b1c-7cc4-9d7e-1f2a3b4c5d6e' })
  requestId: string;
  @ApiPropertyOptional({ description: 'Code-specific detail, e.g. fields[] for validation errors', type: Object })
  details?: unknown;
}
