import type { NestExpressApplication } from '@nestjs/platform-express';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { configureApiApp, createApiApp } from '../../src/app.factory';
import { ApiModule } from '../../src/app.module';

/** A provider swapped in a test app: `provide` is the token (usually an abstract-class port). */
export interface ProviderOverride {
  provide: unknown;
  useValue: unknown;
}

export interface TestApp {
  app: NestExpressApplication;
  http: ReturnType<typeof request>;
  dataSource: DataSource;
  close(): Promise<void>;
}

/**
 * Boots the real api module (real Postgres and Redis, as configured by global setup) without
 * listening on a port; `http` is a supertest agent against it. `env` overrides apply to this app
 * only (config is read at boot).
 */
export async function createTestApp(env: Record<string, string> = {}): Promise<TestApp> {
  return createTestAppWith([], env);
}

/**
 * {@link createTestApp} with providers overridden through Nest's testing module (e.g. a fault port
 * that throws at a recovery point, for the crash proofs); the rest is the real api.
 */
export async function createTestAppWith(overrides: ProviderOverride[], env: Record<string, string> = {}): Promise<TestApp> {
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  try {
    let app: NestExpressApplication;
    if (overrides.length === 0) {
      app = await createApiApp();
    } else {
      let builder = Test.createTestingModule({ imports: [ApiModule] });
      for (const o of overrides) builder = builder.overrideProvider(o.provide).useValue(o.useValue);
      app = configureApiApp((await builder.compile()).createNestApplication<NestExpressApplication>({ bodyParser: false, bufferLogs: true }));
    }
    await app.init();
    return {
      app,
      http: request(app.getHttpServer()),
      dataSource: app.get(DataSource),
      close: () => app.close(),
    };
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

/** Empties every table but the migrations table (between tests that need a clean slate). */
export async function truncateAll(ds: DataSource): Promise<void> {
  const rows: Array<{ tablename: string }> = await ds.query(
    `SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'migrations'`,
  );
  if (rows.length) await ds.query(`TRUNCATE ${rows.map((r) => `"${r.tablename}"`).join(', ')} CASCADE`);
}
