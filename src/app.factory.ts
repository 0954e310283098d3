import { INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { NestExpressApplication } from '@nestjs/platform-express';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import express, { NextFunction, Request, RequestHandler, Response } from 'express';
import { Logger } from 'nestjs-pino';
import { ApiModule } from './app.module';
import { AppConfig } from './config/app-config';
import { mcpRouter } from './transports/mcp/mcp.http';
import { authorizationServerMetadataRouter } from './modules/orgs/oauth-metadata';
import { A2A_RPC_PATH } from './transports/a2a/a2a-card.service';
import { JSON_RPC } from './transports/a2a/a2a-jsonrpc.filter';
import { AppError } from './common/errors/app-error';
import { toAppError } from './common/errors/all-exceptions.filter';
import { requestIdMiddleware, requestIdOf } from './common/errors/request-id';
import { httpMetrics } from './common/metrics';
import { requestLogging } from './common/request-log';
import { validationFields } from './common/validation/validation-errors';
import { KernelValidationPipe } from './kernel/validate';
import { dropIdleClsEnhancers } from './database/cls-enhancers';
import { errorBody } from './common/errors/error-body';

export { validationFields };

/**
 * Dotted path of a key or string value holding a NUL character, which Postgres text and
 * jsonb cannot store (it would surface as a 500); undefined when there is none.
 */
export function nulCharacterParam(body: unknown): string | undefined {
  const pending: Array<[unknown, string]> = [[body, '']];
  while (pending.length > 0) {
    const [value, path] = pending.pop()!;
    if (typeof value === 'string' && value.includes('\u0000')) return path || 'body';
    if (value === null || typeof value !== 'object') continue;
    for (const [key, child] of Object.entries(value as Record<string, unknown>)) {
      const param = path ? `${path}.${key}` : key;
      if (key.includes('\u0000')) return param;
      pending.push([child, param]);
    }
  }
  return undefined;
}

/** Routes whose handlers verify a signature over the exact bytes received (identity provider callbacks). */
const RAW_BODY_PREFIX = '/api/v1/verification/providers/';

/**
 * The body parser (JSON, also as `application/merge-patch+json` for PATCH, RFC 7396; then
 * urlencoded), one middleware whose failures (malformed JSON, > 100 kB) answer in our error body
 * (docs/architecture.md §4); a parsed body with a NUL character anywhere is refused as 400
 * invalid_request naming the field. Under {@link RAW_BODY_PREFIX} the JSON bytes are also kept as
 * `req.rawBody`. A request without a body (no Content-Length, no Transfer-Encoding: RFC 9110 §8.6,
 * as body-parser's own test) passes straight on (docs/decisions.md, "The runner's cost").
 */
function bodyParser() {
  const keepRaw = (req: Request & { rawBody?: Buffer }, _res: Response, buf: Buffer) => {
    if (req.url.startsWith(RAW_BODY_PREFIX)) req.rawBody = buf;
  };
  const json = express.json({ limit: '100kb', verify: keepRaw, type: ['application/json', 'application/merge-patch+json'] });
  const urlencoded = express.urlencoded({ extended: false, limit: '100kb' });
  const answer = (req: Request, res: Response, next: NextFunction) => (err?: unknown) => {
    const nulParam = err ? undefined : nulCharacterParam(req.body);
    if (!err && nulParam === undefined) return next();
    const e = err ? toAppError(err) : AppError.invalidParam(nulParam!, 'must not contain NUL characters');
    const body = errorBody(e, requestIdOf(req));
    // The A2A JSON-RPC routes answer in JSON-RPC 2.0 even here: -32700 for unparsable JSON, else -32600 (docs/architecture.md §14).
    if (req.method === 'POST' && (req.path === A2A_RPC_PATH || req.path.startsWith(`${A2A_RPC_PATH}/`))) {
      const rpcCode = (err as { type?: string } | undefined)?.type === 'entity.parse.failed' ? JSON_RPC.parseError : JSON_RPC.invalidRequest;
      res.status(e.status).json({ jsonrpc: '2.0', id: null, error: { code: rpcCode, message: e.message, data: body } });
      return;
    }
    res.status(e.status).json(body);
  };
  return (req: Request, res: Response, next: NextFunction) => {
    if (req.headers['content-length'] === undefined && req.headers['transfer-encoding'] === undefined) return next();
    json(req, res, (err?: unknown) => (err ? answer(req, res, next)(err) : urlencoded(req, res, answer(req, res, next))));
  };
}

/**
 * `handler` (an express Router) for requests whose path may be one of its routes (`pattern`); any
 * other request passes by without entering the nested router (docs/decisions.md, "The runner's cost").
 */
function onlyFor(pattern: RegExp, handler: RequestHandler): RequestHandler {
  return (req, res, next) => (pattern.test(req.url) ? handler(req, res, next) : next());
}

/** The paths the MCP router and the RFC 8414 metadata router answer (case-insensitive, as Express routes). */
const MCP_AND_WELL_KNOWN = /^\/(mcp|\.well-known\/)/i;

/** The OpenAPI document: version 2.0.0 (docs/api.md Versioning 1), both security schemes. */
export function buildOpenApi(app: INestApplication) {
  const config = new DocumentBuilder()
    .setTitle('Payments control plane')
    .setDescription('Escrow-backed USDC checkout, webhooks and agent payments. Amounts are decimal text; errors are {error, code, requestId, details?}.')
    .setVersion('2.0.0')
    .addApiKey({ type: 'apiKey', in: 'header', name: 'X-Api-Key', description: 'bk_live_… or bk_agent_live_…' }, 'apiKey')
    .addBearerAuth({ type: 'http', scheme: 'bearer', description: 'Any credential: bk_live_…, bk_agent_live_… or bat_…' }, 'bearer')
    .addCookieAuth(
      'pcp_console',
      { type: 'apiKey', in: 'cookie', description: 'Console session (SIWE); also X-CSRF-Token, and X-Console-Organization on organisation routes (docs/architecture.md §19)' },
      'consoleSession',
    )
    .build();
  return SwaggerModule.createDocument(app, config);
}

/**
 * Builds the api application (used by main.ts, the e2e tests and the bench) without listening.
 * Swagger UI at /docs, JSON at /docs-json. The client address (`req.ip`, used by the rate limits)
 * honours X-Forwarded-For only from `TRUSTED_PROXIES` (Express `trust proxy`).
 * @throws Error (no abort) when the configuration is invalid, naming the variable.
 */
export async function createApiApp(): Promise<NestExpressApplication> {
  return configureApiApp(await NestFactory.create<NestExpressApplication>(ApiModule, API_APP_OPTIONS));
}

/** The options {@link createApiApp} creates the api application with (body parsers are ours). */
export const API_APP_OPTIONS = { bodyParser: false, bufferLogs: true, abortOnError: false } as const;

/**
 * Everything {@link createApiApp} does to a created (not yet initialised) api application: logger,
 * proxies, request ids, the request log and metrics, body parsers, validation, MCP and Swagger. Tests that build the ApiModule
 * with their own providers (Nest's testing module) finish the application with it.
 */
export function configureApiApp(app: NestExpressApplication): NestExpressApplication {
  dropIdleClsEnhancers(app);
  app.useLogger(app.get(Logger));
  app.set('trust proxy', app.get(AppConfig).env.TRUSTED_PROXIES);
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(requestIdMiddleware);
  app.use(requestLogging(app));
  app.use(httpMetrics);
  app.use(bodyParser());
  // Validation through the kernel's one validateInput (DESIGN §17), as MCP and A2A validate.
  app.useGlobalPipes(new KernelValidationPipe());
  app.use(onlyFor(MCP_AND_WELL_KNOWN, authorizationServerMetadataRouter(app.get(AppConfig).env)));
  // MCP under the api port unless it has a listener of its own (createMcpApp, MCP_PORT).
  if (app.get(AppConfig).env.MCP_PORT === 0) app.use(onlyFor(MCP_AND_WELL_KNOWN, mcpRouter(app)));
  app.enableShutdownHooks();
  SwaggerModule.setup('docs', app, buildOpenApi(app), { jsonDocumentUrl: 'docs-json' });
  return app;
}

/**
 * The MCP listener of its own (MCP_PORT > 0, docs/architecture.md §1): an express app serving
 * only `/mcp` and its well-known documents, over the api application's services.
 */
export function createMcpApp(app: INestApplication): express.Express {
  const mcp = express();
  mcp.disable('x-powered-by');
  mcp.set('trust proxy', app.get(AppConfig).env.TRUSTED_PROXIES);
  mcp.use(requestIdMiddleware);
  mcp.use(bodyParser());
  mcp.use(mcpRouter(app));
  mcp.use((req: Request, res: Response) => {
    res.status(404).json(errorBody(new AppError('not_found', 'No such route'), requestIdOf(req)));
  });
  return mcp;
}

/**
 * What the checkout host serves (docs/architecture.md §16): the hosted pages, their JSON routes,
 * their script, the owner's signer POST the signer page makes (same origin, CSP `connect-src
 * 'self'`) and the liveness/readiness probes. Everything else is the api's.
 */
const CHECKOUT_HOST_ROUTES = [
  /^\/(checkout|invoices|verify|agents)\/[^/]+(\/.*)?$/,
  /^\/assets\/[^/]+$/,
  /^\/favicon\.ico$/,
  /^\/api\/v1\/agents\/[^/]+\/signer$/,
  /^\/health\/(live|serving|ready)$/,
];

/**
 * The checkout host's own listener (CHECKOUT_PORT > 0, docs/architecture.md §1, §17): the api
 * application's own request pipeline, limited to {@link CHECKOUT_HOST_ROUTES}; any other path
 * answers 404 not_found in our error body. With CHECKOUT_PORT 0 the pages stay on the api port.
 */
export function createCheckoutHostApp(app: NestExpressApplication): express.Express {
  const host = express();
  const api = app.getHttpAdapter().getInstance() as express.Express;
  host.disable('x-powered-by');
  host.set('trust proxy', app.get(AppConfig).env.TRUSTED_PROXIES);
  host.use((req: Request, res: Response, next: NextFunction) => {
    if (CHECKOUT_HOST_ROUTES.some((route) => route.test(req.path))) return api(req, res, next);
    requestIdMiddleware(req, res, () => res.status(404).json(errorBody(new AppError('not_found', 'No such route on the checkout host'), requestIdOf(req))));
  });
  return host;
}
