// Relayed transactions per second on a chain with 2 s blocks (docs/operations.md, "Running at
// scale"): how fast one relayer key gets gasless fundings onto the chain through the product's own
// path (POST /checkout/{id}/relay -> relayer queue -> worker -> node).
//
//   npm run relayer-throughput [-- flags]
//   flags: --relays N (200)  --concurrency C (32)  --workers W (1)  --block-seconds S (2)  --dist DIR
//
// Starts its own anvil (interval mining every S seconds, no automine, CONFIRMATIONS=0), a fresh
// database `pcp_relaybench_<pid>`, one compiled api and W workers. Prepares N checkouts and the
// buyer's EIP-3009 signatures first (untimed), then sends the N relays, C at a time, and times:
// - accepted/s: relays answered 200 (the relayer signed and broadcast it) per second of sending;
// - mined/s: N / (time from the first relay sent to the block holding the relayer's last one),
//   read as the relayer's on-chain nonce reaching its start + N.
// Prints transactions per block and the gas of one relay, so the chain's own ceiling
// (block gas limit / gas per relay / S) can be set beside ours. Exit code 1 when a relay failed.
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { REDIS_URL, api, databaseUrl, eachFlag, fileStamp, freshDatabase, guardChildren, isMain, root, runMain, runNode, sleep, startApi, startWorker, tearDown, writeResult } from './lib.mjs';

const require = createRequire(import.meta.url);
const DB_NAME = `pcp_relaybench_${process.pid}`;

function parseArgs(args) {
  const opts = { relays: 200, concurrency: 32, workers: 1, blockSeconds: 2, dist: 'dist' };
  for (const { flag, arg, value } of eachFlag(args)) {
    if (flag === '--relays') opts.relays = Number(value());
    else if (flag === '--concurrency') opts.concurrency = Number(value());
    else if (flag === '--workers') opts.workers = Number(value());
    else if (flag === '--block-seconds') opts.blockSeconds = Number(value());
    else if (flag === '--dist') opts.dist = value().replace(/\/$/, '');
    else throw new Error(`unknown flag ${arg} (see the header of bench/relayer-throughput.mjs)`);
  }
  for (const k of ['relays', 'concurrency', 'workers', 'blockSeconds']) if (!Number.isInteger(opts[k]) || opts[k] < 1) throw new Error(`--${k} must be a whole number >= 1`);
  return opts;
}

/** One JSON call: `{ status, body }`. */
async function call(base, method, path, { key, body } = {}) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: { ...(key ? { 'x-api-key': key } : {}), ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
    signal: AbortSignal.timeout(120_000),
  });
  return { status: res.status, body: await res.json().catch(() => null) };
}

/** Entry point (`node bench/relayer-throughput.mjs [flags]`). */
export async function main(args = []) {
  const opts = parseArgs(args);
  const chainLib = require(join(root, opts.dist, 'libs', 'chain', 'src', 'index.js'));
  const { Wallet } = await import('ethers');
  const redisPrefix = `pcprelaybench${process.pid}`;
  const releaseChildren = guardChildren();
  const stops = [];
  const out = { startedAt: new Date().toISOString(), options: opts, host: { cpus: (await import('node:os')).cpus().length, loadavg: (await import('node:os')).loadavg() } };
  let anvil;
  let provider;
  try {
    anvil = await chainLib.startAnvil({});
    provider = chainLib.createProvider(anvil.rpcUrl, chainLib.ANVIL_CHAIN_ID, { pollingIntervalMs: 100 });
    const address = (role) => new Wallet(chainLib.anvilKey(role)).address;
    const buyer = Wallet.createRandom();
    const deployed = await chainLib.deployLocalContracts({
      provider,
      deployerKey: chainLib.anvilKey('deployer'),
      termsSigner: address('termsSigner'),
      arbiter: address('arbiter'),
      mint: [{ to: buyer.address, amount: 1_000_000n * 1_000_000n }],
    });
    const env = {
      DATABASE_URL: databaseUrl(DB_NAME), REDIS_URL, REDIS_PREFIX: redisPrefix, LOG_LEVEL: 'error',
      RPC_URL: anvil.rpcUrl, CHAIN_ID: String(chainLib.ANVIL_CHAIN_ID), USDC_ADDRESS: deployed.usdcAddress, ESCROW_ADDRESS: deployed.escrowAddress,
      ESCROW_DEPLOY_BLOCK: String(deployed.deployBlock), CONFIRMATIONS: '0', CHAIN_POLL_MS: '1000', RECONCILE_INTERVAL_S: '3600',
      TERMS_SIGNER_PRIVATE_KEY: chainLib.anvilKey('termsSigner'), RELAYER_PRIVATE_KEY: chainLib.anvilKey('relayer'),
      RATE_LIMIT_PER_MINUTE: '1000000000', RATE_LIMIT_PUBLIC_PER_MINUTE: '1000000000', AUTH_FAILURES_PER_MINUTE: '1000000000',
      SIGNER_ENCRYPTION_KEY: `relaybench-${randomBytes(16).toString('hex')}`,
    };
    await freshDatabase(DB_NAME, opts.dist, env);
    const cli = async (...a) => JSON.parse((await runNode([`${opts.dist}/src/cli.js`, ...a, '--json'], env)).trim().split('\n').at(-1));
    const org = await cli('org:create', '--name', 'Relay Bench', '--handle', `relaybench-${process.pid}`, '--payout-address', Wallet.createRandom().address);
    const key = (await cli('key:create', '--org', org.id, '--type', 'merchant', '--scopes', 'checkout:*')).key;

    // A public-like chain from here: a block every S seconds, nothing mined on demand.
    await provider.send('evm_setAutomine', [false]);
    await provider.send('evm_setIntervalMining', [opts.blockSeconds]);
    const base = await startApi(1, opts.dist, env, stops);
    for (let i = 0; i < opts.workers; i++) await startWorker(i + 1, opts.dist, env, stops);

    // Untimed: N checkouts and the buyer's signed authorizations.
    const prepared = [];
    for (let i = 0; i < opts.relays; i++) {
      const created = await api(base, 'POST', '/api/v1/checkout-sessions', { key, body: { amount: '1.00', description: `relay bench ${i}` } });
      const funding = await api(base, 'GET', `/checkout/${created.id}/funding?buyer=${buyer.address}`);
      const td = funding.typedData;
      const types = { ...td.types };
      delete types.EIP712Domain;
      const m = td.message;
      prepared.push({ id: created.id, body: { buyer: buyer.address, validAfter: String(m.validAfter), validBefore: String(m.validBefore), nonce: m.nonce, signature: await buyer.signTypedData(td.domain, types, m) } });
    }
    const relayer = address('relayer');
    const startNonce = await provider.getTransactionCount(relayer, 'latest');
    const startBlock = await provider.getBlockNumber();
    console.log(`relayer throughput: ${opts.relays} relays, ${opts.concurrency} at a time; 1 api, ${opts.workers} worker(s); ${opts.blockSeconds} s blocks; anvil ${anvil.rpcUrl}`);

    // Timed: the relays, C at a time.
    const statuses = {};
    const latencies = [];
    let next = 0;
    const t0 = Date.now();
    await Promise.all(
      Array.from({ length: opts.concurrency }, async () => {
        while (next < prepared.length) {
          const p = prepared[next++];
          const started = Date.now();
          const res = await call(base, 'POST', `/checkout/${p.id}/relay`, { body: p.body });
          latencies.push(Date.now() - started);
          const label = res.status >= 400 && res.body?.code ? `${res.status} ${res.body.code}` : String(res.status);
          statuses[label] = (statuses[label] ?? 0) + 1;
        }
      }),
    );
    const acceptedMs = Date.now() - t0;
    const accepted = statuses['200'] ?? 0;
    const deadline = Date.now() + 300_000;
    while ((await provider.getTransactionCount(relayer, 'latest')) < startNonce + accepted) {
      if (Date.now() > deadline) throw new Error('relayer transactions not all mined within 300 s');
      await sleep(100);
    }
    const minedMs = Date.now() - t0;
    const endBlock = await provider.getBlockNumber();
    const perBlock = [];
    let gasPerRelay = null;
    let gasLimit = null;
    for (let b = startBlock + 1; b <= endBlock; b++) {
      const block = await provider.getBlock(b, true);
      gasLimit ??= block.gasLimit;
      const ours = block.prefetchedTransactions.filter((tx) => tx.from.toLowerCase() === relayer.toLowerCase());
      perBlock.push(ours.length);
      if (gasPerRelay === null && ours.length) gasPerRelay = (await provider.getTransactionReceipt(ours[0].hash)).gasUsed;
    }
    latencies.sort((a, b) => a - b);
    const pct = (p) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))];
    Object.assign(out, {
      statuses,
      accepted,
      acceptedPerSecond: +(accepted / (acceptedMs / 1000)).toFixed(2),
      minedPerSecond: +(accepted / (minedMs / 1000)).toFixed(2),
      acceptedSeconds: +(acceptedMs / 1000).toFixed(1),
      minedSeconds: +(minedMs / 1000).toFixed(1),
      relayLatencyMs: { p50: pct(50), p95: pct(95), max: latencies.at(-1) },
      blocks: perBlock.length,
      relayerTxsPerBlock: { max: Math.max(...perBlock), nonEmptyBlocks: perBlock.filter((n) => n > 0).length, perBlock },
      gasPerRelay: gasPerRelay?.toString(),
      blockGasLimit: gasLimit?.toString(),
      chainCeilingPerSecond: gasPerRelay ? +(Number(gasLimit) / Number(gasPerRelay) / opts.blockSeconds).toFixed(1) : null,
    });
  } finally {
    await tearDown({ stops, provider, anvil, receiver: { close: async () => {} }, database: DB_NAME, redisPrefix });
    releaseChildren();
  }
  console.log(`\nrelayer throughput (${opts.blockSeconds} s blocks, 1 api, ${opts.workers} worker(s), ${opts.concurrency} concurrent buyers, ${out.host.cpus} cpus, load ${out.host.loadavg.map((l) => l.toFixed(1)).join(' ')} at start)`);
  console.log(`  relays: ${JSON.stringify(out.statuses)}; answered in ${out.acceptedSeconds} s (${out.acceptedPerSecond}/s); p50 ${out.relayLatencyMs.p50} ms, p95 ${out.relayLatencyMs.p95} ms`);
  console.log(`  mined: ${out.accepted} relayer transactions in ${out.minedSeconds} s = ${out.minedPerSecond} tx/s, over ${out.relayerTxsPerBlock.nonEmptyBlocks} blocks (max ${out.relayerTxsPerBlock.max} per block)`);
  console.log(`  one relay uses ${out.gasPerRelay} gas; block gas limit ${out.blockGasLimit}: the chain's own ceiling is ${out.chainCeilingPerSecond} tx/s`);
  console.log(`results: ${writeResult(`relayer-throughput-${fileStamp(new Date(out.startedAt))}.json`, JSON.stringify(out, null, 2))}`);
  if (out.accepted !== opts.relays) throw new Error(`only ${out.accepted} of ${opts.relays} relays answered 200: ${JSON.stringify(out.statuses)}`);
}

if (isMain(import.meta.url)) runMain(main);
