import 'reflect-metadata';
import { createApiApp } from './app.factory';
import { AppConfig } from './config/app-config';

/** api process entrypoint (DESIGN §1). */
async function bootstrap(): Promise<void> {
  const app = await createApiApp();
  const config = app.get(AppConfig);
  await app.listen(config.env.PORT, '0.0.0.0');
  app.getHttpServer();
  console.log(`api listening on ${config.env.API_BASE_URL} (Swagger UI ${config.env.API_BASE_URL}/docs)`);
}

bootstrap().catch((err: Error) => {
  console.error(err.message);
  process.exit(1);
});
