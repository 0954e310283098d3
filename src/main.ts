import './tracing/register-api'; // first: starts OpenTelemetry (when OTEL_* asks for it) before what it instruments loads
import 'reflect-metadata';
import { createApiApp, createCheckoutHostApp, createMcpApp } from './app.factory';
import { AppConfig } from './config/app-config';

/** api process entrypoint (docs/architecture.md §1). */
async function bootstrap(): Promise<void> {
  const app = await createApiApp();
  const config = app.get(AppConfig);
  await app.listen(config.env.PORT, '0.0.0.0');
  console.log(`api listening on ${config.env.API_BASE_URL} (Swagger UI ${config.env.API_BASE_URL}/docs)`);
  if (config.env.MCP_PORT > 0) {
    const server = createMcpApp(app).listen(config.env.MCP_PORT, '0.0.0.0');
    app.getHttpServer().on('close', () => server.close());
  }
  if (config.env.CHECKOUT_PORT > 0) {
    const server = createCheckoutHostApp(app).listen(config.env.CHECKOUT_PORT, '0.0.0.0');
    app.getHttpServer().on('close', () => server.close());
  }
  console.log(`checkout host at ${config.env.CHECKOUT_BASE_URL.replace(/\/$/, '')}/checkout/{id}`);
  console.log(`MCP at ${config.env.MCP_BASE_URL.replace(/\/$/, '')}/mcp`);
}

bootstrap().catch((err: Error) => {
  console.error(err.message);
  process.exit(1);
});
