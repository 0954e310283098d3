import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ERROR_CODES } from './app-error';
import type { AppError, ErrorCode } from './app-error';

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

/**
 * The one way to build an error body (docs/api.md "Errors", DESIGN §4): `{error, code, requestId,
 * details?}` from an {@link AppError}; `details` only when the error has some. Every transport uses
 * it: the REST filter, the body parser, MCP's HTTP router and tool results, A2A's JSON-RPC `data`,
 * the operator pages and the 404 fallbacks.
 */
export function errorBody(e: Pick<AppError, 'message' | 'code' | 'details'>, requestId: string): ErrorBody {
  return { error: e.message, code: e.code, requestId, ...(e.details !== undefined ? { details: e.details } : {}) };
}
