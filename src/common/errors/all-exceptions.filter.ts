import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import { ThrottlerException } from '@nestjs/throttler';
import type { Request, Response } from 'express';
import { AppError, ErrorCode } from './app-error';
import { ErrorBody } from './error-body';
import { requestIdOf } from './request-id';

/**
 * The one global filter (STYLE §6): every failure becomes `{error, code, requestId, details?}`
 * with DESIGN §4's status. Unknown errors are logged with the request id and returned as a
 * generic 500 `internal` (no stack, SQL or secrets in the body).
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
    if (appError.code === 'unauthorized') res.setHeader('WWW-Authenticate', 'Bearer realm="api"');
    const body: ErrorBody = { error: appError.message, code: appError.code, requestId };
    if (appError.details !== undefined) body.details = appError.details;
    res.status(appError.status).json(body);
  }
}

/** Maps framework and body-parser errors onto our codes; anything unknown is `internal`. */
export function toAppError(exception: unknown): AppError {
  if (exception instanceof AppError) return exception;
  if (exception instanceof ThrottlerException) {
    return new AppError('rate_limited', 'Too many requests', undefined, 429, { 'Retry-After': '60' });
  }
  if (exception instanceof HttpException) {
    const status = exception.getStatus();
    const code: ErrorCode | undefined =
      status === 404 ? 'not_found' : status === 401 ? 'unauthorized' : status === 403 ? 'forbidden' : status === 429 ? 'rate_limited' : status < 500 ? 'invalid_request' : undefined;
    if (code === 'not_found') return new AppError('not_found', 'No such route', undefined, 404);
    if (code) return new AppError(code, exception.message, undefined, status === 413 || status === 415 ? 400 : status);
    return new AppError('internal', 'Internal server error');
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
