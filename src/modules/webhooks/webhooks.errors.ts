import { AppError } from '../../common/errors/app-error';

/** Error constructors of the webhooks module (docs/architecture.md, Conventions 6); all are {@link AppError}s. */
export const WebhookErrors = {
  /**
   * 400 invalid_request for a refused webhook URL (docs/architecture.md §8): `details.param` names the field,
   * `details.reason` is `private_address`, `scheme`, `userinfo`, `unresolvable` or `invalid_url`.
   */
  urlRefused(param: string, err: { reason: string; message: string; addressClass?: string }): AppError {
    return AppError.invalidParam(param, err.message, {
      param,
      reason: err.reason,
      ...(err.addressClass ? { addressClass: err.addressClass } : {}),
    });
  },

  /** 404 not_found: no endpoint yet for this organisation. */
  endpointNotFound(): AppError {
    return new AppError('not_found', 'No webhook endpoint is configured; create one with PUT /api/v1/webhook-endpoints');
  },

  /** 404 not_found: unknown delivery id, or another organisation's (never 403, no existence leak). */
  deliveryNotFound(): AppError {
    return AppError.notFound('webhook delivery');
  },

  /** 409 invalid_request: a manual retry to the organisation endpoint while it is disabled. */
  endpointDisabled(reason: string | null): AppError {
    return new AppError(
      'invalid_request',
      'The webhook endpoint is disabled; re-enable it with PUT /api/v1/webhook-endpoints before retrying',
      { reason: 'endpoint_disabled', disabledReason: reason },
      409,
    );
  },
};
