import { applyDecorators, SetMetadata } from '@nestjs/common';
import { ApiConflictResponse, ApiHeader, ApiUnprocessableEntityResponse } from '@nestjs/swagger';
import { ErrorBody } from '../errors/error-body';

export const IDEMPOTENT = 'idempotency:options';
export interface IdempotentOptions {
  /** Missing key → 400 idempotency_required (SPEC Conventions 2, DESIGN §5). */
  required: boolean;
}

/**
 * Enables Idempotency-Key handling on a POST/PUT/PATCH route (DESIGN §5): replay of the stored
 * outcome with `Idempotent-Replayed: true`, 422 for a different request under the same key, 409
 * while the first is in flight. The body field `idempotencyKey`, where the DTO has one, is the
 * same key.
 */
export const Idempotent = (options: IdempotentOptions = { required: false }) =>
  applyDecorators(
    SetMetadata(IDEMPOTENT, options),
    ApiHeader({
      name: 'Idempotency-Key',
      required: options.required,
      description: '1–128 printable ASCII characters; a retry with the same key returns the first outcome for 24 h',
    }),
    ApiConflictResponse({ description: 'idempotency_conflict: a request with this key is still in flight', type: ErrorBody }),
    ApiUnprocessableEntityResponse({ description: 'idempotency_conflict: this key was used for a different request', type: ErrorBody }),
  );
