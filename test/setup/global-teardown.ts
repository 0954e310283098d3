import Redis from 'ioredis';
import { Client } from 'pg';
import { loadTestEnv } from './test-env';

/** Stops the run's anvil, removes this run's Redis keys (the prefix is per run) and its own database. */
export default async function globalTeardown(): Promise<void> {
  const env = loadTestEnv();
  const anvil = (globalThis as { __ANVIL__?: { stop(): Promise<void> } }).__ANVIL__;
  if (anvil) await anvil.stop();
  else if (env.ANVIL_PID) {
    try {
      process.kill(Number(env.ANVIL_PID));
    } catch {
      /* already gone */
    }
  }
  const redis = new Redis(env.REDIS_URL);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${env.REDIS_PREFIX}*`, 'COUNT', 1000);
      if (keys.length) await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
  if (env.DROP_DATABASE_AFTER) {
    const url = new URL(env.DATABASE_URL);
    const name = url.pathname.slice(1);
    url.pathname = '/postgres';
    const admin = new Client({ connectionString: url.toString() });
    await admin.connect();
    try {
      await admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    } finally {
      await admin.end();
    }
  }
}
