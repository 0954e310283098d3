// Funding latency: the wall time from a mined escrow funding transaction to the checkout showing
// `funded` in the API, with the real worker's chain indexer (issue 4, closing note; docs/architecture.md §7).
//
//   npm run bench -- escrow-funding [--fundings 10] [--chain-poll-ms 250] [--poll-ms 20] [--dist DIR]
//
// Starts its own anvil (the compiled @lib/chain: startAnvil + deployLocalContracts), a fresh
// database `pcp_bench_escrow` (dropped, re-created, migrated), the compiled api
// (dist/src/main.js) and worker (dist/src/worker.js, CHAIN_POLL_MS=--chain-poll-ms,
// CONFIRMATIONS=0). For each funding: create a checkout, read its public funding terms, let a
// buyer wallet sign the EIP-3009 authorization and the relayer submit fundWithAuthorization (anvil
// automine: the gateway returns once the receipt exists, i.e. the transaction is mined); from that
// moment GET /api/v1/checkout-sessions/{id} every --poll-ms until status is `funded`. No escrow API
// call is made: only the worker's indexer can move the checkout. A random pause of up to one
// indexer interval separates fundings, so they do not lock onto the job schedule.
// Results: min/median/mean/p90/max on stdout and bench/results/escrow-funding-<timestamp>.json.
import { createRequire } from 'node:module';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { HOST, REDIS_URL, api, databaseUrl, deleteRedisKeys, dropDatabase, eachFlag, fileStamp, freePort, freshDatabase, guardChildren, percentile, root, runNode, sleep, startProcess, writeResult } from './lib.mjs';

const require = createRequire(import.meta.url);
const DB_NAME = 'pcp_bench_escrow';
const DATABASE_URL = databaseUrl(DB_NAME);

function parseArgs(args) {
  const opts = { fundings: 10, chainPollMs: 250, pollMs: 20, dist: 'dist' };
  for (const { flag, arg, value } of eachFlag(args)) {
    const positive = () => {
      const n = Number(value());
      if (!Number.isInteger(n) || n < 1) throw new Error(`${flag} must be a whole number >= 1`);
      return n;
    };
    switch (flag) {
      case '--fundings': opts.fundings = positive(); break;
      case '--chain-poll-ms': opts.chainPollMs = positive(); break;
      case '--poll-ms': opts.pollMs = positive(); break;
      case '--dist': opts.dist = value().replace(/\/$/, ''); break;
      default: throw new Error(`unknown flag ${arg} (see the header of bench/escrow-funding.mjs)`);
    }
  }
  if (opts.chainPollMs < 100) throw new Error('--chain-poll-ms must be >= 100 (CHAIN_POLL_MS minimum)');
  return opts;
}

function stats(samples) {
  const s = [...samples].sort((a, b) => a - b);
  const median = s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  const round = (x) => Number(x.toFixed(1));
  return { n: s.length, minMs: round(s[0]), medianMs: round(median), meanMs: round(s.reduce((a, b) => a + b, 0) / s.length), p90Ms: round(percentile(s, 90)), maxMs: round(s.at(-1)) };
}

export async function main(args) {
  const opts = parseArgs(args);
  const chainLib = require(join(root, opts.dist, 'libs', 'chain', 'src', 'index.js'));
  const testingLib = require(join(root, opts.dist, 'libs', 'chain', 'src', 'testing', 'index.js'));
  const { Wallet } = await import('ethers');
  const stamp = fileStamp();
  const redisPrefix = `pcp_bench_escrow_${Date.now().toString(36)}`;
  const releaseChildren = guardChildren();

  let anvil;
  let provider;
  const stops = [];
  try {
    console.log(`escrow-funding bench: ${opts.fundings} fundings, worker CHAIN_POLL_MS=${opts.chainPollMs}, API polled every ${opts.pollMs} ms, node ${process.version}, ${cpus().length} cpus`);
    anvil = await chainLib.startAnvil({});
    provider = chainLib.createProvider(anvil.rpcUrl, chainLib.ANVIL_CHAIN_ID, { pollingIntervalMs: 20 });
    const address = (role) => new Wallet(chainLib.anvilKey(role)).address;
    const buyer = new Wallet(chainLib.anvilKey('demoBuyer'), provider);
    const deployed = await chainLib.deployLocalContracts({
      provider,
      deployerKey: chainLib.anvilKey('deployer'),
      termsSigner: address('termsSigner'),
      arbiter: address('arbiter'),
      mint: [{ to: buyer.address, amount: 1_000_000n * 1_000_000n }],
    });
    const gateway = chainLib.connectChain(provider, deployed).escrow;
    const senders = new testingLib.EscrowTestSenders(gateway);
    const relayer = new Wallet(chainLib.anvilKey('relayer'), provider);

    const apiPort = await freePort();
    const workerPort = await freePort();
    const base = `http://${HOST}:${apiPort}`;
    const env = {
      DATABASE_URL,
      REDIS_URL,
      REDIS_PREFIX: redisPrefix,
      LOG_LEVEL: 'silent',
      RPC_URL: anvil.rpcUrl,
      CHAIN_ID: String(chainLib.ANVIL_CHAIN_ID),
      USDC_ADDRESS: deployed.usdcAddress,
      ESCROW_ADDRESS: deployed.escrowAddress,
      ESCROW_DEPLOY_BLOCK: String(deployed.deployBlock),
      CONFIRMATIONS: '0',
      CHAIN_POLL_MS: String(opts.chainPollMs),
      TERMS_SIGNER_PRIVATE_KEY: chainLib.anvilKey('termsSigner'),
      RELAYER_PRIVATE_KEY: chainLib.anvilKey('relayer'),
      ARBITER_PRIVATE_KEY: chainLib.anvilKey('arbiter'),
      RATE_LIMIT_PER_MINUTE: '1000000000',
      RATE_LIMIT_PUBLIC_PER_MINUTE: '1000000000',
      PORT: String(apiPort),
      WORKER_PORT: String(workerPort),
      API_BASE_URL: base,
      CHECKOUT_BASE_URL: base,
    };
    await freshDatabase(DB_NAME, opts.dist, env);
    const sellerAddress = address('demoSeller');
    const orgOut = await runNode([`${opts.dist}/src/cli.js`, 'org:create', '--name', 'Bench Shop', '--handle', `bench-${Date.now().toString(36)}`, '--payout-address', sellerAddress, '--json'], env);
    const org = JSON.parse(orgOut.trim().split('\n').at(-1));
    const keyOut = await runNode([`${opts.dist}/src/cli.js`, 'key:create', '--org', org.id, '--type', 'merchant', '--scopes', 'checkout:*', '--json'], env);
    const merchantKey = JSON.parse(keyOut.trim().split('\n').at(-1)).key;

    const apiProc = await startProcess('api', [`${opts.dist}/src/main.js`], env, `${base}/health/live`);
    stops.push(() => apiProc.stop());
    const worker = await startProcess('worker', [`${opts.dist}/src/worker.js`], env, `http://${HOST}:${workerPort}/health/live`);
    stops.push(() => worker.stop());
    console.log(`anvil ${anvil.rpcUrl}, api ${base}, worker :${workerPort}, database ${DB_NAME}`);

    const samples = [];
    for (let i = 0; i < opts.fundings; i++) {
      const checkout = await api(base, 'POST', '/api/v1/checkout-sessions', { key: merchantKey, body: { amount: '25.00', description: `Bench funding ${i + 1}` } });
      const funding = await api(base, 'GET', `/api/v1/checkout-sessions/${checkout.id}/funding-terms?buyer=${buyer.address}`);
      const terms = {
        escrowKey: funding.terms.escrowId,
        buyer: funding.terms.buyer,
        seller: funding.terms.seller,
        amount: BigInt(funding.terms.amount),
        inspectionWindow: funding.terms.inspectionWindow,
        deadline: funding.terms.deadline,
      };
      await sleep(Math.random() * opts.chainPollMs);
      const txHash = await senders.fundWithAuthorization(relayer, buyer, terms, funding.termsSignature);
      const minedAt = performance.now();
      let polls = 0;
      for (;;) {
        polls++;
        const session = await api(base, 'GET', `/api/v1/checkout-sessions/${checkout.id}`, { key: merchantKey });
        if (session.status === 'funded') break;
        if (performance.now() - minedAt > 30_000) throw new Error(`checkout ${checkout.id} not funded 30 s after ${txHash}:\n${worker.output()}`);
        await sleep(opts.pollMs);
      }
      const ms = performance.now() - minedAt;
      samples.push(ms);
      console.log(`  funding ${String(i + 1).padStart(2)}  ${ms.toFixed(1).padStart(7)} ms  (${polls} polls)  ${txHash}`);
    }

    const summary = stats(samples);
    console.log(`\nmined funding tx → checkout funded in the API (worker indexer every ${opts.chainPollMs} ms):`);
    console.log(`  min ${summary.minMs} ms  median ${summary.medianMs} ms  mean ${summary.meanMs} ms  p90 ${summary.p90Ms} ms  max ${summary.maxMs} ms  (n=${summary.n})`);
    const out = writeResult(
      `escrow-funding-${stamp}.json`,
      JSON.stringify({ bench: 'escrow-funding', at: new Date().toISOString(), node: process.version, cpus: cpus().length, options: opts, summary, samplesMs: samples.map((s) => Number(s.toFixed(1))) }, null, 2),
    );
    console.log(`results: ${out}`);
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => {});
    provider?.destroy();
    if (anvil) await anvil.stop();
    await dropDatabase(DB_NAME).catch(() => {});
    await deleteRedisKeys(redisPrefix).catch(() => {});
    releaseChildren();
  }
}
