import { ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');

/** A TCP port on 127.0.0.1 free at the time of the call (the OS picks it; closed before returning). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  await new Promise((r) => server.close(r));
  return port;
}

/** A compiled entrypoint running as a child process: its combined output so far, and its exit. */
export interface Started {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

/**
 * Starts a compiled entrypoint (`dist/src/<entry>`, so run `npm run build` first) with the test
 * environment, LOG_LEVEL=error, plus `env` (a variable set to undefined is removed).
 */
export function startCompiled(entry: string, env: Record<string, string | undefined>): Started {
  const merged: Record<string, string | undefined> = { ...process.env, LOG_LEVEL: 'error', ...env };
  for (const [k, v] of Object.entries(merged)) if (v === undefined) delete merged[k];
  const child = spawn(process.execPath, [join(ROOT, 'dist', 'src', entry)], { cwd: ROOT, env: merged as NodeJS.ProcessEnv });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  return { child, output: () => out, exited };
}

/** SIGTERM unless it has exited already; resolves once it has. */
export async function stopProcess(p: Started): Promise<void> {
  if (p.child.exitCode === null) p.child.kill('SIGTERM');
  await p.exited;
}
