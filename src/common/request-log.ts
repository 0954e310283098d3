import type { INestApplicationContext } from '@nestjs/common';
import type { RequestHandler } from 'express';
import { PARAMS_PROVIDER_TOKEN, PinoLogger, type Params } from 'nestjs-pino';
import { pinoHttp, type Options } from 'pino-http';

/**
 * The request log and the request's logging context as one plain Express middleware, for
 * `app.use` before anything else that can answer (docs/decisions.md, "Request logs" and "The
 * runner's cost"):
 * - pino-http, over nestjs-pino's root logger and with the options CoreModule gives nestjs-pino,
 *   writes the one line per request (id, method, URL, client address, status, response time);
 * - every log a service makes while the request runs is bound to the request through nestjs-pino's
 *   own context ({@link PinoLogger.runInContext}), as nestjs-pino's middleware binds it.
 * It replaces nestjs-pino's middleware (CoreModule mounts it on no route): that one goes through
 * Nest's middleware module, whose per-middleware wrapper (a route pattern match, a WeakSet of
 * handled requests and a proxy on every request) cost more than the logging itself.
 * Call on a created application (its LoggerModule providers exist).
 */
export function requestLogging(app: INestApplicationContext): RequestHandler {
  const params = app.get<Params>(PARAMS_PROVIDER_TOKEN);
  const context = new PinoLogger(params); // sets PinoLogger.root to nestjs-pino's root logger
  const options = (Array.isArray(params.pinoHttp) ? params.pinoHttp[0] : params.pinoHttp) as Options;
  const log = pinoHttp({ ...options, logger: PinoLogger.root });
  return (req, res, next) => log(req, res, () => context.runInContext(next, { bindings: { req } }));
}
