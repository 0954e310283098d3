import './tracing/register-worker'; // first: starts OpenTelemetry (when OTEL_* asks for it) before what it instruments loads
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { Logger } from 'nestjs-pino';
import { AllExceptionsFilter } from './common/errors/all-exceptions.filter';
import { requestIdMiddleware } from './common/errors/request-id';
import { httpMetrics } from './common/metrics';
import { requestLogging } from './common/request-log';
import { AppConfig } from './config/app-config';
import { BULL_BOARD_ROUTE, WorkerModule } from './worker.module';

/**
 * Builds the worker application (used by this entrypoint and by tests) without listening: the
 * queue processors start on init; the HTTP side carries only health, metrics and Bull Board.
 */
export async function createWorkerApp(): Promise<NestExpressApplication> {
  const app = await NestFactory.create<NestExpressApplication>(WorkerModule, { bufferLogs: true, abortOnError: false });
  app.useLogger(app.get(Logger));
  app.disable('x-powered-by');
  app.use(requestIdMiddleware);
  app.use(requestLogging(app));
  app.use(httpMetrics);
  app.useGlobalFilters(new AllExceptionsFilter());
  app.enableShutdownHooks();
  return app;
}

/** worker process entrypoint (docs/architecture.md §1): `npm run worker:prod`. */
async function bootstrap(): Promise<void> {
  const app = await createWorkerApp();
  const port = app.get(AppConfig).env.WORKER_PORT;
  await app.listen(port, '0.0.0.0');
  console.log(`worker running; health, metrics and Bull Board (${BULL_BOARD_ROUTE}) on port ${port}`);
}

if (require.main === module) {
  bootstrap().catch((err: Error) => {
    console.error(err.message);
    process.exit(1);
  });
}
