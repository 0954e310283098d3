import type { NestExpressApplication } from '@nestjs/platform-express';
import { Test, TestingModuleBuilder } from '@nestjs/testing';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { API_APP_OPTIONS, configureApiApp, createApiApp } from '../../src/app.factory';
import { ApiModule } from '../../src/app.module';
import { createOrg, type TestOrg } from './factories';

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
  return bootTestApp(env, createApiApp);
}

/**
 * As {@link createTestApp}, with providers replaced by the test: a list of `{provide, useValue}`
 * (e.g. a fault port that throws at a recovery point, for the crash proofs), or a function over
 * Nest's testing module builder of the ApiModule (e.g. `b => b.overrideProvider(X).useClass(GatedX)`).
 * The test's seams live in the test, never in production classes (STYLE.md).
 */
export async function createTestAppWith(
  override: ProviderOverride[] | ((builder: TestingModuleBuilder) => TestingModuleBuilder),
  env: Record<string, string> = {},
): Promise<TestApp> {
  const apply = Array.isArray(override)
    ? (builder: TestingModuleBuilder) => override.reduce((b, o) => b.overrideProvider(o.provide).useValue(o.useValue), builder)
    : override;
  return bootTestApp(env, async () => {
    const moduleRef = await apply(Test.createTestingModule({ imports: [ApiModule] })).compile();
    return configureApiApp(moduleRef.createNestApplication<NestExpressApplication>(API_APP_OPTIONS));
  });
}

async function bootTestApp(env: Record<string, string>, create: () => Promise<NestExpressApplication>): Promise<TestApp> {
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  try {
    const app = await create();
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

/** What {@link useOrgApp} gives a test file: its api app and one organisation (with a merchant key of every scope). */
export interface OrgApp {
  t: TestApp;
  org: TestOrg;
}

/**
 * The usual set-up of an e2e file: one api app ({@link createTestApp}, with `env`) and one
 * organisation, made before the file's first test and closed after its last. Read `t` and `org`
 * inside tests (they are filled in by then).
 */
export function useOrgApp(env: Record<string, string> = {}): OrgApp {
  const ctx = {} as OrgApp;
  beforeAll(async () => {
    ctx.t = await createTestApp(env);
    ctx.org = await createOrg(ctx.t.app);
  });
  afterAll(() => ctx.t?.close());
  return ctx;
}
