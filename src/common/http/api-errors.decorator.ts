import { applyDecorators } from '@nestjs/common';
import { ApiBadRequestResponse, ApiNotFoundResponse, ApiTooManyRequestsResponse } from '@nestjs/swagger';
import { ErrorBody } from '../errors/error-body';

/** Documents the error responses every authenticated route can give (docs/architecture.md §4). */
export const ApiStandardErrors = (opts: { notFound?: boolean } = {}) =>
  applyDecorators(
    ApiBadRequestResponse({ description: 'invalid_request: the field is named in details.fields', type: ErrorBody }),
    ApiTooManyRequestsResponse({ description: 'rate_limited, with Retry-After', type: ErrorBody }),
    ...(opts.notFound ? [ApiNotFoundResponse({ description: 'not_found', type: ErrorBody })] : []),
  );
