import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';

/** Chain id of every anvil started here (docs/architecture.md §1). */
export const ANVIL_CHAIN_ID = 31337;

/** anvil's default mnemonic; ANVIL_KEYS are its accounts m/44'/60'/0'/0/0..9. */
export const ANVIL_MNEMONIC = 'test test test test test test test test test test test junk';

/** Private keys of anvil's ten default accounts (publicly known: local chains only). */
export const ANVIL_KEYS = [
  '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80',
  '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d',
  '0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a',
  '0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6',
  '0x47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a',
  '0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba',
  '0x92db14e403b83dfe3df233f83dfa3a0d7096f21ca9b0d6d6b8d88b2b4ec1564e',
  '0x4bbbf85ce3377467afe5d46f804f221813b2bb87f24d81f60f1fcdbf7cbf4356',
  '0xdbda1821b80551c9d65939329250298aa3472ba22feea921c0cf5d620ea67b97',
  '0x2a871d0798f97d79848a013d4936a73bf4cc922c825d33c1cf7073dff6d409c6',
] as const;

/** Which ANVIL_KEYS index plays which role on a local chain (scripts/chain-local.mjs, tests). */
export const ANVIL_ROLES = {
  deployer: 0,
  termsSigner: 1,
  relayer: 2,
  arbiter: 3,
  demoBuyer: 4,
  demoSeller: 5,
  /** Receives wallet-check payments on local chains (the VERIFICATION_ADDRESS default). */
  verification: 6,
} as const;

/** A role name of ANVIL_ROLES. */
export type AnvilRole = keyof typeof ANVIL_ROLES;

/** Private key (0x hex) of a local-chain role. */
export function anvilKey(role: AnvilRole): string {
  return ANVIL_KEYS[ANVIL_ROLES[role]];
}

/** Options of startAnvil. `blockTime` in seconds (omitted: automine); `logFile` receives anvil's output. */
export interface StartAnvilOptions {
  port?: number;
  host?: string;
  blockTime?: number;
  /** Own process group, no pipes, not awaited by this process: anvil outlives it (chain:local --detach). */
  detached?: boolean;
  logFile?: string;
  readyTimeoutMs?: number;
}

/**
 * A running anvil. `stop()` sends SIGTERM (SIGKILL after 5 s) and resolves once the process exited;
 * `exited` resolves with the exit code (null when killed by a signal) whoever stopped it. A non-detached
 * anvil keeps the caller's event loop alive until stopped and is killed when the caller's process exits.
 */
export interface AnvilInstance {
  rpcUrl: string;
  port: number;
  pid: number;
  exited: Promise<number | null>;
  stop(): Promise<void>;
}

/**
 * Path of the platform anvil binary from the @foundry-rs/anvil-<os>-<arch> npm package, or $ANVIL_BIN.
 * Spawning it directly keeps one PID (the npm wrapper forwards signals).
 * Throws when the platform package is not installed.
 */
export function anvilBinaryPath(): string {
  if (process.env.ANVIL_BIN) return process.env.ANVIL_BIN;
  const arch = ({ x64: 'amd64', arm64: 'arm64' } as Record<string, string>)[process.arch] ?? process.arch;
  const pkg = `@foundry-rs/anvil-${process.platform}-${arch}`;
  const root = dirname(require.resolve(`${pkg}/package.json`));
  return join(root, 'bin', process.platform === 'win32' ? 'anvil.exe' : 'anvil');
}

/** `eth_chainId` of the node at `rpcUrl` as a number, or null when nothing answers within `timeoutMs`. */
export async function probeChainId(rpcUrl: string, timeoutMs = 1000): Promise<number | null> {
  try {
    const res = await fetch(rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }),
      signal: AbortSignal.timeout(timeoutMs),
    });
    const body = (await res.json()) as { result?: string };
    return typeof body.result === 'string' ? Number(BigInt(body.result)) : null;
  } catch {
    return null;
  }
}

/**
 * Spawns anvil (chain id 31337, default mnemonic) on `port`, or on a free port when none is given, and
 * resolves once `eth_chainId` answers. Throws when the port is already taken, the process exits early or
 * it is not ready in time (default 15 s); with a random port it retries twice on a port clash.
 */
export async function startAnvil(options: StartAnvilOptions = {}): Promise<AnvilInstance> {
  const host = options.host ?? '127.0.0.1';
  const attempts = options.port === undefined ? 3 : 1;
  let lastError: unknown;
  for (let i = 0; i < attempts; i++) {
    const port = options.port ?? (await freePort(host));
    if (!(await isPortFree(host, port))) {
      lastError = new Error(`anvil: port ${port} on ${host} is already in use`);
      continue;
    }
    try {
      return await spawnAnvil(port, options);
    } catch (err) {
      lastError = err;
    }
  }
  throw lastError;
}

async function spawnAnvil(port: number, options: StartAnvilOptions): Promise<AnvilInstance> {
  const host = options.host ?? '127.0.0.1';
  const args = ['--host', host, '--port', String(port), '--chain-id', String(ANVIL_CHAIN_ID), '--mnemonic', ANVIL_MNEMONIC];
  if (options.blockTime !== undefined) args.push('--block-time', String(options.blockTime));
  const logFd = options.logFile ? openSync(options.logFile, 'a') : undefined;
  let child: ChildProcess;
  try {
    child = spawn(anvilBinaryPath(), args, {
      detached: options.detached ?? false,
      stdio: ['ignore', logFd ?? 'ignore', logFd ?? (options.detached ? 'ignore' : 'pipe')],
    });
  } finally {
    if (logFd !== undefined) closeSync(logFd);
  }

  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => resolve(code));
    child.once('error', () => resolve(-1));
  });
  let hasExited = false;
  void exited.then(() => {
    hasExited = true;
  });

  const rpcUrl = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  const deadline = Date.now() + (options.readyTimeoutMs ?? 15000);
  while (true) {
    if (hasExited) throw new Error(`anvil exited before becoming ready on port ${port}: ${stderr.trim() || 'no output'}`);
    if ((await probeChainId(rpcUrl, 500)) === ANVIL_CHAIN_ID) {
      await new Promise((r) => setTimeout(r, 20));
      if (!hasExited) break;
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`anvil not ready on ${rpcUrl} after ${options.readyTimeoutMs ?? 15000} ms`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  if (options.detached) child.unref();
  const killOnExit = () => child.kill('SIGKILL');
  if (!options.detached) process.once('exit', killOnExit);

  return {
    rpcUrl,
    port,
    pid: child.pid!,
    exited,
    async stop() {
      process.removeListener('exit', killOnExit);
      if (hasExited) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}

function isPortFree(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, host, () => server.close(() => resolve(true)));
  });
}

function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, host, () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}
