import { ArgumentsHost, Catch, ExceptionFilter, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import { AppError } from '../../common/errors/app-error';
import { toAppError } from '../../common/errors/all-exceptions.filter';
import { requestIdOf } from '../../common/errors/request-id';
import { errorBody } from '../../common/errors/error-body';

/** JSON-RPC 2.0 error codes (jsonrpc.org/specification §5.1); -32000 = our refusals (server-defined range). */
export const JSON_RPC = { parseError: -32700, invalidRequest: -32600, methodNotFound: -32601, invalidParams: -32602, internal: -32603, refused: -32000 } as const;

/** The JSON-RPC id to echo: a string or integer id of the request body, else null. */
export function rpcIdOf(body: unknown): string | number | null {
  const id = body && typeof body === 'object' ? (body as { id?: unknown }).id : undefined;
  return typeof id === 'string' || (typeof id === 'number' && Number.isInteger(id)) ? id : null;
}

/** An AppError that also names its JSON-RPC error code (envelope errors). */
export class JsonRpcError extends AppError {
  constructor(
    readonly rpcCode: number,
    message: string,
    details?: Record<string, unknown>,
  ) {
    super('invalid_request', message, details);
  }
}

/**
 * Errors of the A2A POST routes as JSON-RPC 2.0 error responses (docs/architecture.md §14): HTTP
 * status of our code (docs/architecture.md §4, so 401/403/422 stay visible to HTTP clients), body
 * `{jsonrpc: "2.0", id, error: {code, message, data}}` whose `data` is our error body
 * `{error, code, requestId, details?}`. Unknown errors are logged and answered 500 internal.
 */
@Catch()
export class JsonRpcExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('A2aErrors');

  catch(exception: unknown, host: ArgumentsHost): void {
    const req = host.switchToHttp().getRequest<Request>();
    const res = host.switchToHttp().getResponse<Response>();
    const e = toAppError(exception);
    const requestId = requestIdOf(req);
    if (e.code === 'internal') this.logger.error({ err: exception, requestId, path: req.originalUrl }, 'unhandled error');
    if (res.headersSent) return;
    for (const [name, value] of Object.entries(e.headers)) res.setHeader(name, value);
    if (e.code === 'unauthorized') res.setHeader('WWW-Authenticate', 'Bearer realm="api"');
    const data = errorBody(e, requestId);
    const code =
      e instanceof JsonRpcError ? e.rpcCode : e.code === 'internal' ? JSON_RPC.internal : e.code === 'invalid_request' || e.code === 'idempotency_required' ? JSON_RPC.invalidParams : JSON_RPC.refused;
    res.status(e.status).json({ jsonrpc: '2.0', id: rpcIdOf(req.body), error: { code, message: e.message, data } });
  }
}
