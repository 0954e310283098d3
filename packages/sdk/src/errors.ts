import type { components } from './generated/openapi';

/** The api's error body (DESIGN §4): `{error, code, requestId, details?}`. */
export type ErrorBody = components['schemas']['ErrorBody'];
/** Every error code the api documents (its OpenAPI `ErrorBody.code` enum). */
export type ErrorCode = ErrorBody['code'];

/**
 * Any failure answered by the api, or of the connection to it. `code`, `requestId` and
 * `details` are the api's error body (DESIGN §4); `status` the HTTP status (0 when no response
 * arrived). Catch a family with `instanceof`, one code with `err.code === 'policy_denied'`.
 */
export class PcpError extends Error {
  override readonly name: string = 'PcpError';
  /** HTTP status; 0 for a connection failure. */
  readonly status: number;
  /** The api's error code, or `connection_error` when no response arrived. */
  readonly code: ErrorCode | 'connection_error';
  /** The `X-Request-Id` of the failed call (quote it to the operator); empty without a response. */
  readonly requestId: string;
  /** Code-specific detail: `fields[]` for validation, `required` for missing_scope, `status`/`allowed` for state conflicts. */
  readonly details?: Record<string, unknown>;
  /** The response headers, when a response arrived. */
  readonly headers?: Headers;

  constructor(init: { message: string; status: number; code: PcpError['code']; requestId: string; details?: Record<string, unknown>; headers?: Headers; cause?: unknown }) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.status = init.status;
    this.code = init.code;
    this.requestId = init.requestId;
    this.details = init.details;
    this.headers = init.headers;
  }
}

/** 400 `invalid_request`, `confirm_required`, `idempotency_required`; 409 `invalid_request` when the resource's state forbids the action, and the refund refusals `refund_exceeds_amount`, `not_refundable`. */
export class InvalidRequestError extends PcpError {
  override readonly name = 'InvalidRequestError';
}
/** 401 `unauthorized`: a missing, unknown or revoked credential. */
export class AuthenticationError extends PcpError {
  override readonly name = 'AuthenticationError';
}
/** 403 `forbidden`, `missing_scope` (`details.required`), `kyb_rejected`. */
export class PermissionError extends PcpError {
  override readonly name = 'PermissionError';
}
/** 404 `not_found`. */
export class NotFoundError extends PcpError {
  override readonly name = 'NotFoundError';
}
/** `idempotency_conflict`: 409 while the first request with the key still runs, 422 for the same key with another body. */
export class IdempotencyError extends PcpError {
  override readonly name = 'IdempotencyError';
}
/** 429 `rate_limited`, after the client's own retries; `retryAfter` in seconds when the api said. */
export class RateLimitError extends PcpError {
  override readonly name = 'RateLimitError';
  get retryAfter(): number | undefined {
    const ms = retryAfterMs(this.headers ?? null, Date.now());
    return ms === undefined ? undefined : ms / 1000;
  }
}
/** 403 agent refusals: `policy_denied`, `mandate_required`, `signer_required`, `agent_paused`, `agents_disabled` (DESIGN §13). */
export class AgentRefusalError extends PcpError {
  override readonly name = 'AgentRefusalError';
}
/** 5xx `internal`, `unavailable`, or a server answer that is not our error body. */
export class ApiServerError extends PcpError {
  override readonly name = 'ApiServerError';
}
/** No response: DNS, refused or reset connection, timeout; after the client's own retries. */
export class ConnectionError extends PcpError {
  override readonly name = 'ConnectionError';
}

const FAMILIES: Record<string, new (init: ConstructorParameters<typeof PcpError>[0]) => PcpError> = {
  invalid_request: InvalidRequestError,
  confirm_required: InvalidRequestError,
  idempotency_required: InvalidRequestError,
  refund_exceeds_amount: InvalidRequestError,
  not_refundable: InvalidRequestError,
  unauthorized: AuthenticationError,
  forbidden: PermissionError,
  missing_scope: PermissionError,
  kyb_rejected: PermissionError,
  not_found: NotFoundError,
  idempotency_conflict: IdempotencyError,
  rate_limited: RateLimitError,
  policy_denied: AgentRefusalError,
  mandate_required: AgentRefusalError,
  signer_required: AgentRefusalError,
  agent_paused: AgentRefusalError,
  agents_disabled: AgentRefusalError,
  internal: ApiServerError,
  unavailable: ApiServerError,
} satisfies Record<ErrorCode, unknown>;

/**
 * The typed error for a non-2xx answer: the class of its code's family; a body that is not our
 * error shape (a proxy's 502 page) gives {@link ApiServerError} for 5xx, {@link PcpError} else.
 */
export function errorFromResponse(response: Response, body: unknown): PcpError {
  const requestId = response.headers.get('x-request-id') ?? '';
  const shaped = body !== null && typeof body === 'object' && typeof (body as ErrorBody).code === 'string' ? (body as ErrorBody) : undefined;
  if (!shaped) {
    const Fallback = response.status >= 500 ? ApiServerError : PcpError;
    const code: ErrorCode = response.status >= 500 ? 'internal' : response.status === 404 ? 'not_found' : 'invalid_request';
    return new Fallback({ message: `HTTP ${response.status}${typeof body === 'string' && body ? `: ${body.slice(0, 200)}` : ''}`, status: response.status, code, requestId, headers: response.headers });
  }
  const Family = FAMILIES[shaped.code] ?? (response.status >= 500 ? ApiServerError : PcpError);
  return new Family({
    message: shaped.error,
    status: response.status,
    code: shaped.code,
    requestId: shaped.requestId || requestId,
    details: shaped.details as Record<string, unknown> | undefined,
    headers: response.headers,
  });
}

/** `Retry-After` (RFC 9110 §10.2.3: delay-seconds or an HTTP-date) in milliseconds from `now`; undefined when absent or unreadable. */
export function retryAfterMs(headers: Headers | null, now: number): number | undefined {
  const value = headers?.get('retry-after')?.trim();
  if (!value) return undefined;
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
