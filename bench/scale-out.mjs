// Scale-out proof: two api and three worker processes on one PostgreSQL and Redis, and every
// piece of background work done exactly once per item: the outbox relay (one delivery per event
// and target), webhook delivery (each webhook-id received; duplicates counted), the chain indexer
// (each log applied once), auto-release (one release transaction per escrow from the relayer, no
// reverted duplicates) — docs/operations.md, "What each worker does".
//
//   npm run scale-out                  20 escrows
//   npm run scale-out -- --escrows 6   the short variant CI runs
//   flags: --escrows N  --apis N (2)  --workers N (3)  --dist DIR
//
// It also prints how long each phase took (creating and funding through the apis; auto-release
// until every escrow shows released through the workers), the figures docs/operations.md
// "Running at scale" compares across replica counts (noisy on a shared machine).
//
// Starts its own anvil (compiled @lib/chain) with our contracts, a fresh database `pcp_scaleout`,
// the compiled api (x2) and worker (x3, CHAIN_POLL_MS=200). Each escrow: a checkout (template
// custom, 1 h inspection window) created through one of the apis, funded gaslessly, accepted and
// marked delivered by the seller on chain; then chain time moves past the window and the workers'
// auto-release passes release everything. Exit code 1 when any item was processed other than once.
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { HOST, REDIS_URL, api, databaseUrl, eachFlag, fileStamp, freshDatabase, guardChildren, isMain, root, runMain, runNode, sleep, startApi, startWorker, tearDown, withPg, writeResult } from './lib.mjs';

const require = createRequire(import.meta.url);
const DB_NAME = `pcp_scaleout_${process.pid}`;
const DATABASE_URL = databaseUrl(DB_NAME);

function parseArgs(args) {
  const opts = { escrows: 20, apis: 2, workers: 3, dist: 'dist' };
  for (const { flag, arg, value } of eachFlag(args)) {
    if (flag === '--escrows') opts.escrows = Number(value());
    else if (flag === '--apis') opts.apis = Number(value());
    else if (flag === '--workers') opts.workers = Number(value());
    else if (flag === '--dist') opts.dist = value().replace(/\/$/, '');
    else throw new Error(`unknown flag ${arg} (see the header of bench/scale-out.mjs)`);
  }
  for (const k of ['escrows', 'apis', 'workers']) if (!Number.isInteger(opts[k]) || opts[k] < 1) throw new Error(`--${k} must be a whole number >= 1`);
  return opts;
}

async function startReceiver() {
  const seen = new Map();
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const id = String(req.headers['webhook-id']);
      seen.set(id, (seen.get(id) ?? 0) + 1);
      res.writeHead(200).end('ok');
    });
  });
  await new Promise((resolve) => server.listen(0, HOST, resolve));
  return { url: `http://${HOST}:${server.address().port}/hook`, seen, close: () => new Promise((r) => { server.closeAllConnections(); server.close(r); }) };
}

/** Entry point (`npm run scale-out -- [flags]`). */
export async function main(args = []) {
  const opts = parseArgs(args);
  const chainLib = require(join(root, opts.dist, 'libs', 'chain', 'src', 'index.js'));
  const testingLib = require(join(root, opts.dist, 'libs', 'chain', 'src', 'testing', 'index.js'));
  const { Wallet, id: topicOf } = await import('ethers');
  const redisPrefix = `pcpscale${process.pid}`;
  const releaseChildren = guardChildren();
  const receiver = await startReceiver();
  const stops = [];
  let anvil;
  let provider;
  const out = { startedAt: new Date().toISOString(), options: opts };
  try {
    anvil = await chainLib.startAnvil({});
    provider = chainLib.createProvider(anvil.rpcUrl, chainLib.ANVIL_CHAIN_ID, { pollingIntervalMs: 20 });
    const address = (role) => new Wallet(chainLib.anvilKey(role)).address;
    const buyer = new Wallet(chainLib.anvilKey('demoBuyer'), provider);
    const seller = Wallet.createRandom().connect(provider);
    await provider.send('anvil_setBalance', [seller.address, '0x56BC75E2D63100000']);
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
    const env = {
      DATABASE_URL, REDIS_URL, REDIS_PREFIX: redisPrefix, LOG_LEVEL: 'error',
      RPC_URL: anvil.rpcUrl, CHAIN_ID: String(chainLib.ANVIL_CHAIN_ID), USDC_ADDRESS: deployed.usdcAddress, ESCROW_ADDRESS: deployed.escrowAddress,
      ESCROW_DEPLOY_BLOCK: String(deployed.deployBlock), CONFIRMATIONS: '0', CHAIN_POLL_MS: '200',
      TERMS_SIGNER_PRIVATE_KEY: chainLib.anvilKey('termsSigner'), RELAYER_PRIVATE_KEY: chainLib.anvilKey('relayer'), ARBITER_PRIVATE_KEY: chainLib.anvilKey('arbiter'),
      RATE_LIMIT_PER_MINUTE: '1000000000', RATE_LIMIT_PUBLIC_PER_MINUTE: '1000000000', AUTH_FAILURES_PER_MINUTE: '1000000000',
      WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOW_PRIVATE: 'true', SIGNER_ENCRYPTION_KEY: `scale-${randomBytes(16).toString('hex')}`,
    };
    await freshDatabase(DB_NAME, opts.dist, env);
    const cli = async (...a) => JSON.parse((await runNode([`${opts.dist}/src/cli.js`, ...a, '--json'], env)).trim().split('\n').at(-1));
    const org = await cli('org:create', '--name', 'Scale Shop', '--handle', `scale-${process.pid}`, '--payout-address', seller.address);
    const key = (await cli('key:create', '--org', org.id, '--type', 'merchant', '--scopes', 'checkout:*,webhooks:*,escrow:*')).key;

    const apis = [];
    for (let i = 0; i < opts.apis; i++) apis.push(await startApi(i + 1, opts.dist, env, stops));
    for (let i = 0; i < opts.workers; i++) await startWorker(i + 1, opts.dist, env, stops);
    await api(apis[0], 'PUT', '/api/v1/webhook-endpoints', { key, body: { url: receiver.url } });
    console.log(`scale-out: ${opts.escrows} escrows; ${opts.apis} apis, ${opts.workers} workers, anvil ${anvil.rpcUrl}`);

    const checkouts = [];
    const t0 = Date.now();
    for (let i = 0; i < opts.escrows; i++) {
      const base = apis[i % apis.length];
      const checkout = await api(base, 'POST', '/api/v1/checkout-sessions', {
        key,
        body: { amount: '5.00', description: `scale ${i}`, escrowTemplateId: 'custom', metadata: { inspectionWindowHours: 1 } },
      });
      const funding = await api(base, 'GET', `/api/v1/checkout-sessions/${checkout.id}/funding-terms${fundingQuery(buyer.address)}`);
      await senders.fundWithAuthorization(relayer, buyer, chainTerms(funding), funding.termsSignature);
      checkouts.push({ id: checkout.id, escrowKey: funding.terms.escrowId });
    }
    for (const c of checkouts) {
      await gateway.act(seller, 'accept', c.escrowKey);
      await gateway.act(seller, 'markDelivered', c.escrowKey);
    }
    const createdMs = Date.now() - t0;
    await provider.send('evm_increaseTime', [3700]);
    await provider.send('evm_mine', []);
    const t1 = Date.now();
    const deadline = Date.now() + 120_000;
    for (;;) {
      const states = await Promise.all(checkouts.map((c) => api(apis[0], 'GET', `/api/v1/checkout-sessions/${c.id}`, { key }).then((s) => s.status)));
      if (states.every((s) => s === 'released')) break;
      if (Date.now() > deadline) throw new Error(`not all released after 120 s: ${JSON.stringify(states)}`);
      await sleep(200);
    }
    out.phaseSeconds = { createAndFund: +(createdMs / 1000).toFixed(1), autoRelease: +((Date.now() - t1) / 1000).toFixed(1) };
    await sleep(3000); // let every worker run its next passes too: a duplicate would show now

    // On chain: Released events per escrow (the gateway parses the contract's logs), and every
    // relayer transaction calling release on the escrow contract.
    const logs = await gateway.getEscrowEvents(deployed.deployBlock, 'latest');
    const releasedPer = new Map();
    for (const e of logs) if (e.action === 'released') releasedPer.set(e.escrowKey.toLowerCase(), (releasedPer.get(e.escrowKey.toLowerCase()) ?? 0) + 1);
    const releaseSelector = topicOf('release(bytes32)').slice(0, 10);
    const head = await provider.getBlockNumber();
    let relayerReleaseTxs = 0;
    let relayerReverted = 0;
    for (let b = deployed.deployBlock; b <= head; b++) {
      const block = await provider.getBlock(b, true);
      for (const tx of block.prefetchedTransactions) {
        if (tx.from.toLowerCase() !== relayer.address.toLowerCase() || tx.to?.toLowerCase() !== deployed.escrowAddress.toLowerCase()) continue;
        if (!tx.data.startsWith(releaseSelector)) continue;
        relayerReleaseTxs++;
        if ((await provider.getTransactionReceipt(tx.hash)).status !== 1) relayerReverted++;
      }
    }
    const db = await withPg(DB_NAME, async (c) => ({
      chainEvents: (await c.query('SELECT count(*)::int AS n, count(DISTINCT (tx_hash, log_index))::int AS u FROM escrow_chain_events')).rows[0],
      events: (await c.query('SELECT count(*)::int AS n FROM outbox_events')).rows[0].n,
      deliveriesPerEvent: (await c.query('SELECT max(n)::int AS max, min(n)::int AS min FROM (SELECT count(*) AS n FROM webhook_deliveries GROUP BY event_id) d')).rows[0],
      undelivered: (await c.query(`SELECT count(*)::int AS n FROM webhook_deliveries WHERE status <> 'succeeded'`)).rows[0].n,
    }));
    const escrowLogs = logs.length;
    Object.assign(out, {
      escrows: checkouts.length,
      releasedLogsPerEscrow: { min: Math.min(...checkouts.map((c) => releasedPer.get(c.escrowKey.toLowerCase()) ?? 0)), max: Math.max(0, ...releasedPer.values()) },
      relayerReleaseTxs,
      relayerReverted,
      escrowLogs,
      appliedChainEvents: db.chainEvents.n,
      distinctAppliedChainEvents: db.chainEvents.u,
      outboxEvents: db.events,
      deliveriesPerEvent: db.deliveriesPerEvent,
      undelivered: db.undelivered,
      webhooksReceived: [...receiver.seen.values()].reduce((a, b) => a + b, 0),
      webhookIdsReceived: receiver.seen.size,
    });
  } finally {
    await tearDown({ stops, provider, anvil, receiver, database: DB_NAME, redisPrefix });
    releaseChildren();
  }
  console.log(`\nscale-out (${opts.apis} apis, ${opts.workers} workers): ${out.escrows} escrows auto-released`);
  console.log(`  phases: create and fund ${out.phaseSeconds.createAndFund} s, auto-release until all released ${out.phaseSeconds.autoRelease} s`);
  console.log(`  Released logs per escrow: min ${out.releasedLogsPerEscrow.min}, max ${out.releasedLogsPerEscrow.max}; relayer release txs ${out.relayerReleaseTxs} (reverted ${out.relayerReverted})`);
  console.log(`  escrow logs on chain ${out.escrowLogs}, applied ${out.appliedChainEvents} (distinct ${out.distinctAppliedChainEvents})`);
  console.log(`  outbox events ${out.outboxEvents}; deliveries per event min ${out.deliveriesPerEvent.min} max ${out.deliveriesPerEvent.max}; not succeeded ${out.undelivered}`);
  console.log(`  webhooks received ${out.webhooksReceived} for ${out.webhookIdsReceived} webhook-ids`);
  console.log(`results: ${writeResult(`scale-out-${fileStamp(new Date(out.startedAt))}.json`, JSON.stringify(out, null, 2))}`);
  const failures = [];
  if (out.releasedLogsPerEscrow.min !== 1 || out.releasedLogsPerEscrow.max !== 1) failures.push('an escrow was not released exactly once');
  if (out.relayerReleaseTxs !== out.escrows || out.relayerReverted !== 0) failures.push(`${out.relayerReleaseTxs} relayer release transactions (${out.relayerReverted} reverted) for ${out.escrows} escrows`);
  if (out.appliedChainEvents !== out.escrowLogs || out.distinctAppliedChainEvents !== out.escrowLogs) failures.push('chain events not applied exactly once');
  if (out.deliveriesPerEvent.min !== 1 || out.deliveriesPerEvent.max !== 1) failures.push('an event did not get exactly one delivery');
  if (out.undelivered !== 0 || out.webhookIdsReceived !== out.outboxEvents) failures.push('a webhook was not delivered');
  if (failures.length) throw new Error(`scale-out failed: ${failures.join('; ')}`);
  console.log('scale-out passed');
}

/** The funding terms as the chain library takes them. */
function chainTerms(funding) {
  return { ...funding.terms, escrowKey: funding.terms.escrowId, amount: BigInt(funding.terms.amount) };
}
/** Funding terms bound to the buyer where the contract binds them (contract v2); ignored before. */
function fundingQuery(buyer) {
  return `?buyer=${buyer}`;
}

if (isMain(import.meta.url)) runMain(main);
