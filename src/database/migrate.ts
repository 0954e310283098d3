import { DataSource } from 'typeorm';
import { validateEnv } from '../config/env.schema';
import { dataSourceOptions } from './data-source';

/**
 * Creates the database named in DATABASE_URL when it is missing, then runs pending migrations.
 * Exit code 1 with the error message on failure. Used by `npm run migration:run`, the demo and CI.
 */
export async function migrate(databaseUrl: string, log: (line: string) => void = () => {}): Promise<string[]> {
  await ensureDatabase(databaseUrl);
  const ds = new DataSource(dataSourceOptions(databaseUrl));
  await ds.initialize();
  try {
    const ran = await ds.runMigrations({ transaction: 'each' });
    for (const m of ran) log(`migrated ${m.name}`);
    return ran.map((m) => m.name);
  } finally {
    await ds.destroy();
  }
}

/** Creates the target database through the `postgres` maintenance database if it does not exist. */
export async function ensureDatabase(databaseUrl: string): Promise<void> {
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.slice(1));
  if (!/^[A-Za-z0-9_]+$/.test(name)) throw new Error(`DATABASE_URL database name ${JSON.stringify(name)} must match [A-Za-z0-9_]+`);
  url.pathname = '/postgres';
  const admin = new DataSource({ type: 'postgres', url: url.toString(), installExtensions: false });
  await admin.initialize();
  try {
    const rows: unknown[] = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (rows.length === 0) await admin.query(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.destroy();
  }
}

if (require.main === module) {
  migrate(validateEnv(process.env).DATABASE_URL, (l) => console.log(l))
    .then((ran) => console.log(ran.length ? `${ran.length} migration(s) applied` : 'database is up to date'))
    .catch((err: Error) => {
      console.error(`migration failed: ${err.message}`);
      process.exit(1);
    });
}
