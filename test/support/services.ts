import Redis from 'ioredis';
import { Client } from 'pg';

/** Runs `sql` against the `postgres` maintenance database of the server in `databaseUrl`. */
async function onServer(databaseUrl: string, sql: string): Promise<void> {
  const url = new URL(databaseUrl);
  url.pathname = '/postgres';
  const admin = new Client({ connectionString: url.toString() });
  await admin.connect();
  try {
    await admin.query(sql);
  } finally {
    await admin.end();
  }
}

function databaseName(databaseUrl: string): string {
  const name = decodeURIComponent(new URL(databaseUrl).pathname.slice(1));
  if (!/^[A-Za-z0-9_]+$/.test(name)) throw new Error(`test database name ${JSON.stringify(name)} must match [A-Za-z0-9_]+`);
  return name;
}

/** Drops the database named in `databaseUrl` if it exists, ending its connections. */
export function dropDatabase(databaseUrl: string): Promise<void> {
  return onServer(databaseUrl, `DROP DATABASE IF EXISTS "${databaseName(databaseUrl)}" WITH (FORCE)`);
}

/** Drops and creates the database named in `databaseUrl` (empty; run migrations next). */
export async function recreateDatabase(databaseUrl: string): Promise<void> {
  await dropDatabase(databaseUrl);
  await onServer(databaseUrl, `CREATE DATABASE "${databaseName(databaseUrl)}"`);
}

/** Deletes keys matching `${prefix}*` with SCAN + DEL (never FLUSHALL: the Redis is shared). @returns how many. */
export async function deleteKeys(redisUrl: string, prefix: string): Promise<number> {
  const redis = new Redis(redisUrl);
  let deleted = 0;
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      if (keys.length) deleted += await redis.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
  return deleted;
}
