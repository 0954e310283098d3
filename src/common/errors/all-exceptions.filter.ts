import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import { ChainTxPendingError, isNodeError } from '@lib/chain';
import type { Request, Response } from 'express';
import { AppError, ErrorCode } from './app-error';
import { errorBody } from './error-body';
import { requestIdOf } from './request-id';

/**
 * The one global filter (docs/architecture.md, Conventions 6): every failure becomes `{error, code, requestId, details?}`
 * with docs/architecture.md §4's status. Unknown errors are logged with the request id and returned as a
 * generic 500 `internal` (no stack, SQL or secrets in the body). A chain node error that reached it
 * is 503 `unavailable`, and every 503 carries `Retry-After` (DESIGN §22). A send broadcast but not confirmed
 * in time (ChainTxPendingError) is 409 `invalid_request` with details `{reason: 'pending', txHash}`.
 */
@Catch()
export class AllExceptionsFilter implements ExceptionFilter {
  private readonly logger = new Logger('Errors');

  catch(exception: unknown, host: ArgumentsHost): void {
    const ctx = host.switchToHttp();
    const req = ctx.getRequest<Request>();
    const res = ctx.getResponse<Response>();
    const requestId = requestIdOf(req);
    const appError = toAppError(exception);
    if (appError.code === 'internal') {
      this.logger.error({ err: exception, requestId, path: req.originalUrl }, 'unhandled error');
    }
    if (res.headersSent) return;
    for (const [name, value] of Object.entries(appError.headers)) res.setHeader(name, value);
    // Every 503 says when to come back (DESIGN §22), whichever layer raised it.
    if (appError.code === 'unavailable' && !res.hasHeader('Retry-After')) res.setHeader('Retry-After', '2');
    if (appError.code === 'unauthorized') res.setHeader('WWW-Authenticate', 'Bearer realm="api"');
    res.status(appError.status).json(errorBody(appError, requestId));
  }
}

/** Maps framework and body-parser errors onto our codes; anything unknown is `internal`. */
export function toAppError(exception: unknown): AppError {
  if (exception instanceof AppError) return exception;
  if (exception instanceof HttpException) {
    const status = exception.getStatus();
    const code: ErrorCode | undefined =
      status === 404 ? 'not_found' : status === 401 ? 'unauthorized' : status === 403 ? 'forbidden' : status === 429 ? 'rate_limited' : status < 500 ? 'invalid_request' : undefined;
    if (code === 'not_found') return new AppError('not_found', 'No such route', undefined, 404);
    if (status === 503) {
      // e.g. /health/ready (terminus): which checks are down goes into details.
      const response = exception.getResponse() as { error?: unknown } | string;
      const failing = typeof response === 'object' && response.error && typeof response.error === 'object' ? { checks: response.error } : undefined;
      return new AppError('unavailable', 'A dependency is unavailable', failing as Record<string, unknown> | undefined, 503, { 'Retry-After': '2' });
    }
    if (code) return new AppError(code, exception.message, undefined, status === 413 || status === 415 ? 400 : status);
    return new AppError('internal', 'Internal server error');
  }
  if (exception instanceof ChainTxPendingError) {
    // Broadcast, not confirmed within CHAIN_WAIT_MS (DESIGN §18, §22): pending, never "failed"; 409 like every
    // other pending chain answer (docs/architecture.md §7). No Retry-After: sending again is a second transaction.
    return new AppError('invalid_request', `The transaction ${exception.txHash} was broadcast but not confirmed in time; it may still be mined: check it before sending again`, { reason: 'pending', txHash: exception.txHash }, 409);
  }
  if (isNodeError(exception)) {
    // A chain read that escaped the chain room's mapping (DESIGN §22): a node error is never a 500.
    return new AppError('unavailable', 'The chain node did not answer; nothing was decided: retry shortly', { reason: 'chain_unavailable' }, 503, { 'Retry-After': '2' });
  }
  if (isDependencyDown(exception)) {
    return new AppError('unavailable', 'The service is briefly unavailable; retry shortly', undefined, 503, { 'Retry-After': '2' });
  }
  const bodyParser = exception as { type?: string; status?: number };
  if (bodyParser && typeof bodyParser.type === 'string' && typeof bodyParser.status === 'number' && bodyParser.status < 500) {
    const reason =
      bodyParser.type === 'entity.too.large'
        ? 'Request body exceeds 100 kB'
        : bodyParser.type === 'entity.parse.failed'
          ? 'Request body is not valid JSON'
          : 'Request body could not be read';
    return new AppError('invalid_request', reason, { reason: bodyParser.type });
  }
  return new AppError('internal', 'Internal server error');
}

/** Node socket errors and PostgreSQL SQLSTATEs that mean "the database is unreachable or restarting", not a bug. */
const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', '57P01', '57P02', '57P03', '08000', '08001', '08003', '08004', '08006']);
const UNREACHABLE_MESSAGES = [/Connection terminated/i, /timeout exceeded when trying to connect/i, /Client has encountered a connection error/i, /connection is closed/i, /the database system is (starting up|shutting down)/i];

/**
 * True when `err` (or the driver error it wraps) says a dependency (PostgreSQL, Redis) cannot be
 * reached right now: the request is answered 503 `unavailable` with Retry-After instead of 500,
 * so clients and load balancers retry (docs/decisions.md, "503 while a dependency is down").
 */
export function isDependencyDown(err: unknown): boolean {
  for (let e = err as { code?: unknown; message?: unknown; driverError?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 4; depth++) {
    if (typeof e.code === 'string' && UNREACHABLE_CODES.has(e.code)) return true;
    if (typeof e.message === 'string' && UNREACHABLE_MESSAGES.some((re) => re.test(e!.message as string))) return true;
    e = (e.driverError ?? e.cause) as typeof e;
  }
  return false;
}
