import { DataSource, DataSourceOptions } from 'typeorm';
import { MIGRATIONS } from '../../migrations';
import { ENTITIES } from './entities';

/**
 * The one DataSource definition for the app, the CLI, the worker and migrations (docs/architecture.md, Conventions 11).
 * `synchronize` is never on: the schema changes only through `migrations/`.
 */
export function dataSourceOptions(databaseUrl: string): DataSourceOptions {
  return {
    type: 'postgres',
    url: databaseUrl,
    entities: ENTITIES,
    migrations: MIGRATIONS,
    migrationsTableName: 'migrations',
    synchronize: false,
    installExtensions: false,
    // A request waits at most 5 s for a connection: while PostgreSQL is down or restarting the
    // api answers 503 instead of hanging (docs/decisions.md, "503 while a dependency is down").
    extra: { max: 20, connectionTimeoutMillis: 5000 },
  };
}

/** Used by the TypeORM CLI (`npm run migration:generate`). */
export default new DataSource(dataSourceOptions(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/payments'));
