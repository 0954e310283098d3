import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { Client } from 'pg';
import { migrate } from '../../src/database/migrate';
import { BASE_TEST_ENV, TEST_ENV_FILE } from './test-env';

/**
 * Runs once before the integration and e2e suites: drops and recreates the test database,
 * runs every migration, and leaves the environment for test files in .local/test-env.json.
 * The database is TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/pcp_test).
 */
export default async function globalSetup(): Promise<void> {
  const databaseUrl = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/pcp_test';
  const url = new URL(databaseUrl);
  const name = url.pathname.slice(1);
  url.pathname = '/postgres';
  const admin = new Client({ connectionString: url.toString() });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await admin.query(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.end();
  }
  await migrate(databaseUrl);
  const env: Record<string, string> = {
    ...BASE_TEST_ENV,
    DATABASE_URL: databaseUrl,
    REDIS_URL: process.env.TEST_REDIS_URL ?? process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    REDIS_PREFIX: `pcptest${process.pid}`,
  };
  mkdirSync(dirname(TEST_ENV_FILE), { recursive: true });
  writeFileSync(TEST_ENV_FILE, JSON.stringify(env, null, 2));
}
