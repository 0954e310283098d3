import { INestApplication, ValidationError, ValidationPipe } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { NestExpressApplication } from '@nestjs/platform-express';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import express, { NextFunction, Request, Response } from 'express';
import { Logger } from 'nestjs-pino';
import { ApiModule } from './app.module';
import { AppError } from './common/errors/app-error';
import { toAppError } from './common/errors/all-exceptions.filter';
import { requestIdMiddleware, requestIdOf } from './common/errors/request-id';

/** Flattens class-validator errors into `details.fields = [{param, message}]` (nested params dotted). */
export function validationFields(errors: ValidationError[], parent = ''): Array<{ param: string; message: string }> {
  return errors.flatMap((e) => {
    const param = parent ? `${parent}.${e.property}` : e.property;
    const own = Object.values(e.constraints ?? {}).map((message) => ({ param, message }));
    return [...own, ...validationFields(e.children ?? [], param)];
  });
}

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

/**
 * Body parsers (JSON, also as `application/merge-patch+json` for PATCH, RFC 7396) whose failures (malformed JSON, > 100 kB) answer in our error body (docs/architecture.md §4); a
 * parsed body with a NUL character anywhere is refused as 400 invalid_request naming the field.
 */
function bodyParsers() {
  const parsers = [express.json({ limit: '100kb', type: ['application/json', 'application/merge-patch+json'] }), express.urlencoded({ extended: false, limit: '100kb' })];
  return parsers.map((parse) => (req: Request, res: Response, next: NextFunction) =>
    parse(req, res, (err?: unknown) => {
      const nulParam = err ? undefined : nulCharacterParam(req.body);
      if (!err && nulParam === undefined) return next();
      const e = err ? toAppError(err) : AppError.invalidParam(nulParam!, 'must not contain NUL characters');
      res.status(e.status).json({ error: e.message, code: e.code, requestId: requestIdOf(req), ...(e.details ? { details: e.details } : {}) });
    }),
  );
}

/** The OpenAPI document: version 2.0.0 (SPEC Versioning 1), both security schemes. */
export function buildOpenApi(app: INestApplication) {
  const config = new DocumentBuilder()
    .setTitle('Payments control plane')
    .setDescription('Escrow-backed USDC checkout, webhooks and agent payments. Amounts are decimal text; errors are {error, code, requestId, details?}.')
    .setVersion('2.0.0')
    .addApiKey({ type: 'apiKey', in: 'header', name: 'X-Api-Key', description: 'bk_live_… or bk_agent_live_…' }, 'apiKey')
    .addBearerAuth({ type: 'http', scheme: 'bearer', description: 'Any credential: bk_live_…, bk_agent_live_… or bat_…' }, 'bearer')
    .build();
  return SwaggerModule.createDocument(app, config);
}

/**
 * Builds the api application (used by main.ts, the e2e tests and the bench) without listening.
 * Swagger UI at /docs, JSON at /docs-json.
 */
export async function createApiApp(): Promise<NestExpressApplication> {
  const app = await NestFactory.create<NestExpressApplication>(ApiModule, { bodyParser: false, bufferLogs: true });
  app.useLogger(app.get(Logger));
  app.set('trust proxy', 'loopback');
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(requestIdMiddleware);
  for (const parser of bodyParsers()) app.use(parser);
  app.useGlobalPipes(
    new ValidationPipe({
      whitelist: true,
      forbidNonWhitelisted: true,
      transform: true,
      exceptionFactory: (errors) => {
        const fields = validationFields(errors);
        return new AppError('invalid_request', fields.map((f) => f.message).join('; ') || 'Invalid request', { fields });
      },
    }),
  );
  app.enableShutdownHooks();
  SwaggerModule.setup('docs', app, buildOpenApi(app), { jsonDocumentUrl: 'docs-json' });
  return app;
}
