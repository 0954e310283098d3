#!/usr/bin/env node
/**
 * Local chain for development and the demo (docs/architecture.md §1, §7): anvil on $ANVIL_PORT (default 8545), chain id
 * 31337, TestUSDC + CheckoutEscrow deployed with the ANVIL_ROLES keys, 10,000 USDC minted to demoBuyer
 * and 1,000 USDC to the relayer, settings written to .local/chain.env and printed.
 *
 * If a chain id 31337 node already answers on the port and .local/chain.env points at this build's
 * contracts on it, it is reused as is; a 31337 node without them gets them deployed. In both cases the
 * script exits, since it does not own that node. Otherwise it starts anvil and stays in the foreground
 * until SIGINT/SIGTERM, or with --detach writes anvil's pid to .local/anvil.pid (log .local/anvil.log)
 * and exits, leaving anvil running (stop it with `kill $(cat .local/anvil.pid)`).
 *
 * Needs the compiled library: `npm run build` (dist/libs/chain/src/index.js).
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const LIB = join(ROOT, 'dist/libs/chain/src/index.js');
const LOCAL_DIR = join(ROOT, '.local');
const ENV_FILE = join(LOCAL_DIR, 'chain.env');
const PID_FILE = join(LOCAL_DIR, 'anvil.pid');
const LOG_FILE = join(LOCAL_DIR, 'anvil.log');
const USDC = 10n ** 6n;

if (!existsSync(LIB)) fail(`missing ${LIB}; run \`npm run build\` first`);
const chain = createRequire(import.meta.url)(LIB);
const { Wallet } = createRequire(join(ROOT, 'package.json'))('ethers');

const detach = process.argv.includes('--detach');
const port = Number(process.env.ANVIL_PORT ?? 8545);
if (!Number.isInteger(port) || port <= 0 || port > 65535) fail(`invalid ANVIL_PORT ${process.env.ANVIL_PORT}`);
// ANVIL_HOST=0.0.0.0 lets other containers reach it (docker-compose.yml); clients still use loopback here.
const host = process.env.ANVIL_HOST ?? '127.0.0.1';
const rpcUrl = `http://127.0.0.1:${port}`;
mkdirSync(LOCAL_DIR, { recursive: true });

const running = await chain.probeChainId(rpcUrl);
if (running !== null) {
  if (running !== chain.ANVIL_CHAIN_ID) fail(`port ${port} is taken by a node with chain id ${running}`);
  const provider = chain.createProvider(rpcUrl, chain.ANVIL_CHAIN_ID);
  const previous = readEnv();
  if (
    previous.RPC_URL === rpcUrl &&
    previous.USDC_ADDRESS &&
    previous.ESCROW_ADDRESS &&
    (await chain.hasLocalContracts(provider, { usdcAddress: previous.USDC_ADDRESS, escrowAddress: previous.ESCROW_ADDRESS }))
  ) {
    console.log(`chain:local: reusing the node on ${rpcUrl} and the contracts in .local/chain.env`);
    printEnv(readFileSync(ENV_FILE, 'utf8'));
  } else {
    console.log(`chain:local: a chain id ${running} node already runs on ${rpcUrl}; deploying the contracts onto it`);
    printEnv(await deployAndWrite(provider));
  }
  provider.destroy();
  process.exit(0);
}

const anvil = await chain.startAnvil({ port, host, detached: detach, logFile: detach ? LOG_FILE : undefined });
if (!detach) rmSync(PID_FILE, { force: true });
const provider = chain.createProvider(anvil.rpcUrl, chain.ANVIL_CHAIN_ID);
let env;
try {
  env = await deployAndWrite(provider);
} catch (err) {
  await anvil.stop();
  fail(`deployment failed: ${err?.stack ?? err}`);
}
provider.destroy();
printEnv(env);

if (detach) {
  writeFileSync(PID_FILE, `${anvil.pid}\n`);
  console.log(`chain:local: anvil (pid ${anvil.pid}) left running on ${anvil.rpcUrl}; log ${LOG_FILE}, stop with: kill $(cat .local/anvil.pid)`);
  process.exit(0);
}

console.log(`chain:local: anvil (pid ${anvil.pid}) running on ${anvil.rpcUrl}; Ctrl-C to stop`);
let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.on(signal, async () => {
    if (stopping) return;
    stopping = true;
    await anvil.stop();
    console.log('chain:local: anvil stopped');
    process.exit(0);
  });
}
anvil.exited.then((code) => {
  if (stopping) return;
  console.error(`chain:local: anvil exited unexpectedly (code ${code})`);
  process.exit(1);
});

async function deployAndWrite(provider) {
  const key = (role) => chain.anvilKey(role);
  const address = (role) => new Wallet(key(role)).address;
  const deployed = await chain.deployLocalContracts({
    provider,
    deployerKey: key('deployer'),
    termsSigner: address('termsSigner'),
    arbiter: address('arbiter'),
    mint: [
      { to: address('demoBuyer'), amount: 10_000n * USDC },
      { to: address('relayer'), amount: 1_000n * USDC },
    ],
  });
  const text = [
    `RPC_URL=${rpcUrl}`,
    `CHAIN_ID=${chain.ANVIL_CHAIN_ID}`,
    `USDC_ADDRESS=${deployed.usdcAddress}`,
    `ESCROW_ADDRESS=${deployed.escrowAddress}`,
    `ESCROW_DEPLOY_BLOCK=${deployed.deployBlock}`,
    `TERMS_SIGNER_PRIVATE_KEY=${key('termsSigner')}`,
    `RELAYER_PRIVATE_KEY=${key('relayer')}`,
    `ARBITER_PRIVATE_KEY=${key('arbiter')}`,
    `DEMO_BUYER_PRIVATE_KEY=${key('demoBuyer')}`,
    `DEMO_SELLER_ADDRESS=${address('demoSeller')}`,
    '',
  ].join('\n');
  writeFileSync(ENV_FILE, text);
  return text;
}

function readEnv() {
  if (!existsSync(ENV_FILE)) return {};
  return Object.fromEntries(
    readFileSync(ENV_FILE, 'utf8')
      .split('\n')
      .map((line) => line.match(/^([A-Z0-9_]+)=(.*)$/))
      .filter(Boolean)
      .map((m) => [m[1], m[2]]),
  );
}

function printEnv(text) {
  console.log(`# ${ENV_FILE}`);
  process.stdout.write(text);
}

function fail(message) {
  console.error(`chain:local: ${message}`);
  process.exit(1);
}
