import type { INestApplicationContext } from '@nestjs/common';
import type { IncomingMessage } from 'node:http';
import type { RequestHandler, Response } from 'express';
import { PARAMS_PROVIDER_TOKEN, PinoLogger, type Params } from 'nestjs-pino';
import type { Options } from 'pino-http';

/**
 * The request log and the request's logging context as one plain Express middleware, for
 * `app.use` before anything else that can answer (docs/decisions.md, "Request logs", "The
 * runner's cost" and "Per-request overhead, third pass"):
 * - every log a service makes while the request runs is bound to the request through nestjs-pino's
 *   own context ({@link PinoLogger.runInContext}, a child logger carrying `req`), as nestjs-pino's
 *   middleware binds it;
 * - when the response ends (its `close`, which follows `finish`, or ends an aborted request) that
 *   same child writes the one line per request pino-http wrote, with the same shape: `req` (id,
 *   method, URL, client address), `res` (status), `responseTime` (ms), "request completed"; a
 *   status ≥ 500 adds `err` and says "request errored". Requests that CoreModule's `autoLogging`
 *   ignores (health probes, /metrics) get the context and no line.
 * It replaces pino-http itself, which built a second child logger per request (one serialisation
 * of `req` each), kept arrays of loggers on the request and the response and listened to three
 * events, where one child and one listener do. The line is built only when the logger's level
 * writes `info` (under `LOG_LEVEL=silent` or `warn` nothing is listened to).
 * Call on a created application (its LoggerModule providers exist).
 */
export function requestLogging(app: INestApplicationContext): RequestHandler {
  const params = app.get<Params>(PARAMS_PROVIDER_TOKEN);
  const context = new PinoLogger(params); // sets PinoLogger.root to nestjs-pino's root logger
  const options = (Array.isArray(params.pinoHttp) ? params.pinoHttp[0] : params.pinoHttp) as Options | undefined;
  const autoLogging = options?.autoLogging;
  const ignore = typeof autoLogging === 'object' && autoLogging.ignore ? autoLogging.ignore : undefined;
  const logsRequests = autoLogging !== false;
  return (req, res, next) => {
    const start = Date.now();
    context.runInContext(
      () => {
        const log = context.logger;
        if (logsRequests && log.isLevelEnabled('info') && !ignore?.(req as IncomingMessage)) res.once('close', () => requestLine(log, res, start));
        next();
      },
      { bindings: { req } },
    );
  };
}

/** The one line for a finished (or aborted) request, as pino-http 11 wrote it with its default options. */
function requestLine(log: PinoLogger['logger'], res: Response, start: number): void {
  const responseTime = Date.now() - start;
  if (res.statusCode >= 500) {
    log.info({ res, err: new Error(`failed with status code ${res.statusCode}`), responseTime }, 'request errored');
    return;
  }
  log.info({ res, responseTime }, 'request completed');
}
