import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Where global setup leaves the environment (database, chain addresses) for test files. */
export const TEST_ENV_FILE = join(__dirname, '..', '..', '.local', 'test-env.json');

/** Environment every test process starts from; global setup adds DATABASE_URL and chain settings. */
export const BASE_TEST_ENV: Record<string, string> = {
  NODE_ENV: 'test',
  LOG_LEVEL: 'silent',
  API_BASE_URL: 'http://127.0.0.1:3000',
  CHECKOUT_BASE_URL: 'https://pay.test',
  WEBHOOK_ALLOW_HTTP: 'true',
  WEBHOOK_ALLOW_PRIVATE: 'true',
  WEBHOOK_RETRY_SCALE: '0.001',
  RATE_LIMIT_PER_MINUTE: '100000',
  RATE_LIMIT_PUBLIC_PER_MINUTE: '100000',
  AUTH_FAILURES_PER_MINUTE: '100000',
};

/**
 * The environment global setup made for this run: from PCP_TEST_ENV (set by global setup and
 * inherited by jest workers, so concurrent runs stay apart), else from the last run's file.
 */
export function loadTestEnv(): Record<string, string> {
  if (process.env.PCP_TEST_ENV) return JSON.parse(process.env.PCP_TEST_ENV) as Record<string, string>;
  if (!existsSync(TEST_ENV_FILE)) throw new Error(`${TEST_ENV_FILE} is missing: run the tests through jest's global setup`);
  return JSON.parse(readFileSync(TEST_ENV_FILE, 'utf8')) as Record<string, string>;
}
