import { join } from 'node:path';
import { DataSource, DataSourceOptions } from 'typeorm';
import { MIGRATIONS } from '../../migrations';

/**
 * The one DataSource definition for the app, the CLI, the worker and migrations (docs/architecture.md, Conventions 11).
 * `synchronize` is never on: the schema changes only through `migrations/`.
 * @param entities none by default: in Nest each domain module registers its own entities with
 *   `TypeOrmModule.forFeature` and DatabaseModule loads them (`autoLoadEntities`), so this room
 *   names no domain; migrations need none.
 */
export function dataSourceOptions(databaseUrl: string, entities: NonNullable<DataSourceOptions['entities']> = []): DataSourceOptions {
  return {
    type: 'postgres',
    url: databaseUrl,
    entities,
    migrations: MIGRATIONS,
    migrationsTableName: 'migrations',
    synchronize: false,
    installExtensions: false,
    // A request waits at most 5 s for a connection: while PostgreSQL is down or restarting the
    // api answers 503 instead of hanging (docs/decisions.md, "503 while a dependency is down").
    extra: { max: 20, connectionTimeoutMillis: 5000 },
  };
}

/** Every entity file of the tree, for tools outside Nest: the TypeORM CLI below and the schema-drift test. */
export const ENTITY_FILES = join(__dirname, '..', '**', '*.entity.{ts,js}');

/** Used by the TypeORM CLI (`npm run migration:generate`). */
export default new DataSource(dataSourceOptions(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/payments', [ENTITY_FILES]));
