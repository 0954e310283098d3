import { applyDecorators, SetMetadata, UseInterceptors } from '@nestjs/common';
import { ApiConflictResponse, ApiHeader, ApiUnprocessableEntityResponse } from '@nestjs/swagger';
import { ErrorBody } from '../../common/errors/error-body';
import { IdempotencyInterceptor } from './idempotency.interceptor';
import { IDEMPOTENT, type IdempotentOptions } from './idempotent-work';

export { IDEMPOTENT, IdempotentSteps, operationScope, runUnkeyed, type IdempotentOptions } from './idempotent-work';

/**
 * Idempotency-Key handling for a route running the declared operation `options.operation` — stated
 * by {@link Runs} (kernel/http.ts), never on its own (docs/architecture.md §5, DESIGN §17): replay
 * of the stored outcome with `Idempotent-Replayed: true`, 422 for a different request under the
 * same key, 409 while the first is in flight. The body field `idempotencyKey`, where the DTO has
 * one, is the same key. The route gets the {@link IdempotencyInterceptor} with it.
 */
export const Idempotent = (options: IdempotentOptions) =>
  applyDecorators(
    SetMetadata(IDEMPOTENT, options),
    // Only these routes pay for an interceptor: a route without one skips Nest's interceptor chain
    // (docs/decisions.md, "The runner's cost").
    UseInterceptors(IdempotencyInterceptor),
    ApiHeader({
      name: 'Idempotency-Key',
      required: options.required,
      description: '1–128 printable ASCII characters; a retry with the same key returns the first outcome for 24 h',
    }),
    ApiConflictResponse({ description: 'idempotency_conflict: a request with this key is still in flight', type: ErrorBody }),
    ApiUnprocessableEntityResponse({ description: 'idempotency_conflict: this key was used for a different request', type: ErrorBody }),
  );
