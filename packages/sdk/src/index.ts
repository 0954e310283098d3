/** @pcp/sdk: the typed client of the payments control plane (packages/sdk/README.md). */
export { Pcp } from './client';
export type { PcpOptions, PathsFor, RequestInit, RequestArgs, ResponseBody, ListPath, ListItem, paths, components, operations } from './client';
export type { Credentials, RetryOptions } from './transport';
export {
  PcpError,
  InvalidRequestError,
  AuthenticationError,
  PermissionError,
  NotFoundError,
  IdempotencyError,
  RateLimitError,
  AgentRefusalError,
  ApiServerError,
  ConnectionError,
} from './errors';
export type { ErrorBody, ErrorCode } from './errors';
export { Webhooks, WebhookSignatureError } from './webhooks';
export type { WebhookEvent, WebhookEventType, IncomingHeaders } from './webhooks';
