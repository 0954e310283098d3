import Redis from 'ioredis';
import { loadTestEnv } from './test-env';

/** Removes this run's Redis keys (the prefix is per run). */
export default async function globalTeardown(): Promise<void> {
  const env = loadTestEnv();
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
}
