/**
 * Error codes of docs/api.md "Errors" with the HTTP status docs/architecture.md §4 binds to each;
 * `unavailable` (503, a dependency such as PostgreSQL is unreachable) is our extension.
 */
export const ERROR_STATUS = {
  invalid_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  rate_limited: 429,
  idempotency_conflict: 409,
  kyb_rejected: 403,
  missing_scope: 403,
  confirm_required: 400,
  idempotency_required: 400,
  internal: 500,
  policy_denied: 403,
  mandate_required: 403,
  signer_required: 403,
  agent_paused: 403,
  agents_disabled: 403,
  unavailable: 503,
  // Refunds (DESIGN §21): the amount is more than is left to refund; the source is not (or no longer) received.
  refund_exceeds_amount: 409,
  not_refundable: 409,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;
export const ERROR_CODES = Object.keys(ERROR_STATUS) as ErrorCode[];

/**
 * The one error type services throw (docs/architecture.md, Conventions 6). The global filter renders it as
 * `{error, code, requestId, details?}` with `status` (docs/architecture.md §4); `headers` are added to the
 * response (e.g. `Retry-After`).
 */
export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: Record<string, unknown>,
    readonly status: number = ERROR_STATUS[code],
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'AppError';
  }

  /** 400 invalid_request for one parameter: `details.fields = [{param, message}]`. */
  static invalidParam(param: string, message: string, extra: Record<string, unknown> = {}): AppError {
    return new AppError('invalid_request', `${param} ${message}`, { fields: [{ param, message }], ...extra });
  }

  /** 409 invalid_request: the resource's state forbids the action (docs/architecture.md §4). */
  static invalidState(resource: string, status: string, allowed: readonly string[]): AppError {
    return new AppError(
      'invalid_request',
      `${resource} is ${status}; this action needs one of: ${allowed.join(', ')}`,
      { reason: 'invalid_state', status, allowed },
      409,
    );
  }

  static notFound(resource: string): AppError {
    return new AppError('not_found', `No such ${resource}`);
  }
}
