import { execFileSync } from 'node:child_process';
import { existsSync, globSync } from 'node:fs';
import { join } from 'node:path';
import { DataSource, getMetadataArgsStorage } from 'typeorm';
import type { ColumnMetadata } from 'typeorm/metadata/ColumnMetadata';
import { dataSourceOptions } from '../../src/database/data-source';

/**
 * Every entity class of the tree: each domain module registers its own with `forFeature`, so the
 * test finds them as the TypeORM CLI does, by file name, and takes the classes `@Entity` recorded.
 */
function allEntities(): Array<new () => unknown> {
  // TypeORM keeps its decorator records on the process's global object, which outlives this test
  // file's module registry: take this file's own classes, then ask whether each is an entity.
  return globSync('src/**/*.entity.ts', { cwd: join(__dirname, '..', '..') })
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- loading files found by name, as the TypeORM CLI does
    .flatMap((file) => Object.values(require(join(__dirname, '..', '..', file)) as Record<string, unknown>))
    .filter((value): value is new () => unknown => typeof value === 'function' && getMetadataArgsStorage().tables.some((t) => t.type === 'regular' && t.target === value));
}
const ENTITIES = allEntities();

/**
 * Tables the migrations create that no entity maps, each with why (raw-SQL tables). A new table
 * must either get an entity or a line here.
 */
const TABLES_WITHOUT_ENTITY: Record<string, string> = {
  migrations: "TypeORM's own record of applied migrations",
  chain_blocks: 'indexer block hashes for reorg detection, raw SQL in the escrow indexer',
  chain_events_set_aside: 'chain events that could not be applied, written with raw SQL by EscrowRepository.setAside',
  agent_owner_nonces: 'single-use owner signature nonces, raw SQL in AgentsRepository',
  payee_handles: 'the one case-insensitive handle namespace, maintained by triggers on organizations and agents',
  relayer_nonces: 'nonce allocation per relayer key, raw SQL under a row lock in the relayer repository',
  invoice_number_counters: 'the next invoice number per organisation, taken under a row lock with raw SQL by the invoices repository',
  relayer_transactions: 'one row per relayer send (signed hash before broadcast), raw SQL in the relayer repository',
  reconcile_cancellations: 'cancellations reconciliation read from the chain in bounded windows, raw SQL in the reconciliation repository',
};

/**
 * Columns of entity tables the entity deliberately does not map, as `table.column` → why. Empty
 * today: every column of an entity's table is mapped.
 */
const UNMAPPED_COLUMNS: Record<string, string> = {};

interface DbColumn {
  table: string;
  column: string;
  dataType: string;
  udtName: string;
  nullable: boolean;
  charLength: number | null;
  precision: number | null;
  scale: number | null;
}

/** What a column looks like in Postgres, in the shape information_schema.columns gives it. */
interface ColumnShape {
  type: string;
  nullable: boolean;
  length?: number;
  precision?: number;
  scale?: number;
}

/** `withPrecision`: also numeric precision and scale (where the entity states them; unstated, any is accepted). */
function dbShape(c: DbColumn, withPrecision: boolean): ColumnShape {
  const shape: ColumnShape = { type: c.dataType === 'ARRAY' ? `${c.udtName.replace(/^_/, '')}[]` : c.dataType, nullable: c.nullable };
  if (c.charLength !== null) shape.length = c.charLength;
  if (withPrecision) {
    shape.precision = c.precision ?? undefined;
    shape.scale = c.scale ?? undefined;
  }
  return shape;
}

/**
 * The entity's column as Postgres would store it: TypeORM's own normalised type name
 * (`timestamptz` → `timestamp with time zone`, `int` → `integer`), arrays as `<element udt>[]`;
 * an untyped string column as `text`.
 */
function entityShape(ds: DataSource, col: ColumnMetadata): ColumnShape {
  // A bare `@Column()` on a string property leaves TypeORM to infer `String`, which it would
  // create as varchar; the house convention (every migration) is text, so that is what it must be.
  const inferredString = col.type === String;
  const normalized = inferredString ? 'text' : ds.driver.normalizeType(col);
  const udt: Record<string, string> = { text: 'text', uuid: 'uuid', integer: 'int4', bigint: 'int8', boolean: 'bool', 'timestamp with time zone': 'timestamptz', 'character varying': 'varchar' };
  const shape: ColumnShape = { type: col.isArray ? `${udt[normalized] ?? normalized}[]` : normalized, nullable: col.isNullable };
  if (col.length) shape.length = Number(col.length);
  if (col.precision !== undefined && col.precision !== null) {
    shape.precision = col.precision;
    shape.scale = col.scale ?? 0;
  }
  return shape;
}

/**
 * The hand-written migrations and the TypeORM entities describe one schema (docs/architecture.md, Conventions 11: "a drift
 * test keeps them equal"): after the migrations have run (global setup migrates the test
 * database), every entity's table has exactly the entity's columns, with the same types,
 * nullability, precision and primary key; and every table belongs to an entity or is listed
 * above with its reason.
 */
describe('schema drift: migrations against entity metadata', () => {
  let ds: DataSource;
  let db: DbColumn[];

  beforeAll(async () => {
    ds = new DataSource(dataSourceOptions(process.env.DATABASE_URL!, ENTITIES));
    await ds.initialize();
    const pending = await ds.showMigrations();
    expect(pending).toBe(false);
    db = (
      await ds.query(`
        SELECT table_name, column_name, data_type, udt_name, is_nullable, character_maximum_length, numeric_precision, numeric_scale
          FROM information_schema.columns
         WHERE table_schema = 'public'`)
    ).map((r: Record<string, unknown>) => ({
      table: r.table_name as string,
      column: r.column_name as string,
      dataType: r.data_type as string,
      udtName: r.udt_name as string,
      nullable: r.is_nullable === 'YES',
      charLength: r.character_maximum_length as number | null,
      precision: r.numeric_precision as number | null,
      scale: r.numeric_scale as number | null,
    }));
  });
  afterAll(() => ds?.destroy());

  const entityTables = () => ds.entityMetadatas.map((m) => m.tableName).sort();

  it('maps every table the migrations create, or lists it with a reason', () => {
    const dbTables = [...new Set(db.map((c) => c.table))].sort();
    expect(dbTables).toEqual([...entityTables(), ...Object.keys(TABLES_WITHOUT_ENTITY)].sort());
  });

  it("gives every entity's table exactly the entity's columns: names, types, nullability, lengths, stated precision", () => {
    const expected: Record<string, Record<string, ColumnShape>> = {};
    const actual: Record<string, Record<string, ColumnShape>> = {};
    for (const meta of ds.entityMetadatas) {
      const mapped = Object.fromEntries(meta.columns.map((col) => [col.databaseName, entityShape(ds, col)]));
      expected[meta.tableName] = mapped;
      actual[meta.tableName] = Object.fromEntries(
        db
          .filter((c) => c.table === meta.tableName && !(`${meta.tableName}.${c.column}` in UNMAPPED_COLUMNS))
          .map((c) => [c.column, dbShape(c, mapped[c.column]?.precision !== undefined)]),
      );
    }
    expect(Object.keys(expected)).toHaveLength(ENTITIES.length);
    expect(actual).toEqual(expected);
  });

  it("has the entity's primary key on every entity table", async () => {
    const rows: Array<{ table: string; column: string }> = await ds.query(`
      SELECT tc.table_name AS table, kcu.column_name AS column
        FROM information_schema.table_constraints tc
        JOIN information_schema.key_column_usage kcu ON kcu.constraint_name = tc.constraint_name AND kcu.table_schema = tc.table_schema
       WHERE tc.table_schema = 'public' AND tc.constraint_type = 'PRIMARY KEY'`);
    for (const meta of ds.entityMetadatas) {
      const pk = rows.filter((r) => r.table === meta.tableName).map((r) => r.column).sort();
      expect({ table: meta.tableName, pk }).toEqual({ table: meta.tableName, pk: meta.primaryColumns.map((c) => c.databaseName).sort() });
    }
  });

  it('lists no unmapped column or raw table that does not exist (the allow-lists stay true)', () => {
    for (const key of Object.keys(UNMAPPED_COLUMNS)) {
      const [table, column] = key.split('.');
      expect(db.some((c) => c.table === table && c.column === column)).toBe(true);
    }
    for (const table of Object.keys(TABLES_WITHOUT_ENTITY)) expect(db.some((c) => c.table === table)).toBe(true);
  });
});

/**
 * Each domain module registers its own entities (`TypeOrmModule.forFeature`, loaded by
 * DatabaseModule's `autoLoadEntities`) when its file is imported, so a process whose root forgot a
 * module would fail only where that entity is first used. Each compiled root module is loaded
 * alone in a fresh node process (one process per root, as in production) and must register every
 * entity of the tree.
 */
/**
 * Entities a process does not register because it loads no module that uses them, with the reason.
 * A process that starts using one must load its module (and this list shrinks).
 */
const NOT_LOADED: Record<string, Record<string, string>> = {
  api: {},
  worker: {
    ConsoleNonce: 'the console is served by the api only',
    ConsoleSession: 'the console is served by the api only',
    IdempotencyRecord: 'the worker records no Idempotency-Key; its reaper deletes expired records by SQL',
    A2aTask: 'A2A tasks are written by the api’s A2A routes only',
    CheckoutRelay: 'pay-page relays are written by the api’s pay-page routes only (the relayer keeps its own rows)',
  },
  cli: {
    ConsoleNonce: 'the console is served by the api only',
    ConsoleSession: 'the console is served by the api only',
    IdempotencyRecord: 'the CLI takes no Idempotency-Key',
    A2aTask: 'A2A tasks are written by the api’s A2A routes only',
    CheckoutRelay: 'pay-page relays are written by the api’s pay-page routes only',
  },
};

describe('every process registers every entity it may use', () => {
  const root = join(__dirname, '..', '..');
  it.each([
    ['api', 'app.module.js', 'm.ApiModule'],
    ['worker', 'worker.module.js', 'm.WorkerModule'],
    ['cli', 'cli.module.js', 'm.CliModule.forCommand([])'],
  ])('%s', (name, file, expr) => {
    const modulePath = join(root, 'dist', 'src', file);
    if (!existsSync(modulePath)) throw new Error(`${modulePath} is missing: build first (npm run build)`);
    const script = `
      const m = require(${JSON.stringify(modulePath)});
      const { Test } = require('@nestjs/testing');
      const { DataSource } = require('typeorm');
      Test.createTestingModule({ imports: [${expr}] }).compile().then((ref) => {
        console.log(JSON.stringify(ref.get(DataSource).entityMetadatas.map((e) => e.name).sort()));
        process.exit(0);
      }, (err) => { console.error(err); process.exit(1); });`;
    const out = execFileSync(process.execPath, ['-e', script], { env: process.env, cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
    const expected = ENTITIES.map((e) => e.name).filter((n) => !(n in NOT_LOADED[name]));
    expect(JSON.parse(out.trim().split('\n').pop()!)).toEqual(expected.sort());
  });
});
