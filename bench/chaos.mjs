// Chaos run on a chain that behaves like a public one (DESIGN §18, issue 22): anvil mining a block
// every 2 s (no automine), CONFIRMATIONS=2, two api and two worker processes (compiled dist), a
// webhook receiver, and a mixed load — checkouts funded through the pay page's gasless relay
// (POST /checkout/{id}/relay with the buyer's EIP-3009 signature), agent payments (POST /payments),
// agent escrows (POST /agent-escrows, funded gaslessly from the agent's signer) and x402 payments
// (our GET /x402/challenge settled by the agent with POST /x402/settle), every agent spend under one
// daily limit — while the harness injects, in this order:
//   1. dropped transactions   anvil_dropTransaction on every pending relayer transaction
//   2. a base-fee spike       anvil_setNextBlockBaseFeePerGas (x8 the current base fee)
//   3. a reorg                evm_snapshot, blocks mined on top (deeper than CONFIRMATIONS), evm_revert
//   4. relayer ETH drained    anvil_setBalance(relayer, 0), refilled a few seconds later
//   5. a worker SIGKILL       and a new worker started
// Then it waits (bounded) for quiescence and asserts: `cli reconcile --json` clean; every relay
// that answered 200 and every payment `succeeded` used its authorization exactly once on chain;
// every `failed` payment used nothing; the agent's signer sent no more than its daily limit; every
// checkout funded once (one Funded escrow event); webhooks: one webhook-id per (checkout, type).
//
// Payments of every mode (instant, escrow, x402) are held to the payment checks; every escrow is
// funded at most once.
//
//   npm run chaos                                   20 checkouts, 30 payments, 10 agent escrows, 10 x402
//   npm run chaos -- --checkouts 4 --payments 6 --escrows 3 --x402 3     the short variant CI runs
//   flags: --checkouts N  --payments N  --escrows N  --x402 N
//          --dist DIR  --faults all|drop,fee,reorg,drain,kill (default all)
//   BENCH_LOG_DIR=DIR keeps every api's and worker's whole log (level info) in DIR/<process>.log.
//
// Everything listens on and talks to 127.0.0.1 only. Exit code 1 when an assertion fails.
// Results: stdout and bench/results/chaos-<timestamp>.json.
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { HOST, REDIS_URL, databaseUrl, eachFlag, fileStamp, freshDatabase, guardChildren, isMain, root, runMain, runNode, sleep, startApi, startWorker, tearDown, withPg, writeResult } from './lib.mjs';

const require = createRequire(import.meta.url);
const DB_NAME = 'pcp_chaos';
const DATABASE_URL = databaseUrl(DB_NAME);
const BLOCK_SECONDS = 2;
const CONFIRMATIONS = 2;
const PAYMENT_AMOUNT = '1.00';
/** Every fault the run knows; all of them run by default (`--faults drop,fee,…` picks some). */
const ALL_FAULTS = ['drop', 'fee', 'reorg', 'drain', 'kill'];
const DEFAULT_FAULTS = ALL_FAULTS;
/** 30 gwei: far above anvil's idle base fee, under the relayer's default cap (RELAYER_MAX_FEE_GWEI=100). */
const SPIKED_BASE_FEE_WEI = 30_000_000_000n;
const QUIESCENCE_TIMEOUT_MS = 240_000;
const REQUEST_TIMEOUT_MS = 20_000;

function parseArgs(args) {
  const opts = { checkouts: 20, payments: 30, escrows: null, x402: null, dist: 'dist', faults: DEFAULT_FAULTS };
  for (const { flag, arg, value } of eachFlag(args)) {
    if (flag === '--checkouts') opts.checkouts = Number(value());
    else if (flag === '--payments') opts.payments = Number(value());
    else if (flag === '--escrows') opts.escrows = Number(value());
    else if (flag === '--x402') opts.x402 = Number(value());
    else if (flag === '--faults') {
      const v = value();
      opts.faults = v === 'all' ? ALL_FAULTS : v.split(',').filter(Boolean);
    }
    else if (flag === '--dist') opts.dist = value().replace(/\/$/, '');
    else throw new Error(`unknown flag ${arg} (see the header of bench/chaos.mjs)`);
  }
  const unknown = opts.faults.filter((f) => !ALL_FAULTS.includes(f));
  if (unknown.length) throw new Error(`unknown fault ${unknown.join(',')} (have ${ALL_FAULTS.join(',')})`);
  opts.escrows ??= 10;
  opts.x402 ??= 10;
  for (const k of ['checkouts', 'payments']) if (!Number.isInteger(opts[k]) || opts[k] < 1 || opts[k] > 500) throw new Error(`--${k} must be a whole number in 1..500`);
  for (const k of ['escrows', 'x402']) if (!Number.isInteger(opts[k]) || opts[k] < 0 || opts[k] > 500) throw new Error(`--${k} must be a whole number in 0..500`);
  return opts;
}

/** Records every delivery: per webhook-id its count, event type and object id. */
async function startReceiver() {
  const seen = new Map();
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const id = String(req.headers['webhook-id']);
      let type = null;
      let objectId = null;
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        type = body.type ?? null;
        objectId = body.data?.object?.id ?? body.data?.id ?? null;
      } catch {
        /* counted with a null type */
      }
      const entry = seen.get(id) ?? { count: 0, type, objectId };
      entry.count++;
      seen.set(id, entry);
      res.writeHead(200).end('ok');
    });
  });
  await new Promise((resolve) => server.listen(0, HOST, resolve));
  return { url: `http://${HOST}:${server.address().port}/hook`, seen, close: () => new Promise((r) => { server.closeAllConnections(); server.close(r); }) };
}

/** One HTTP call with a deadline: `{ status, body }`, status 'timeout'/'error' when there was no answer. */
async function call(base, method, path, { key, body, headers = {} } = {}) {
  try {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { ...(key ? { 'x-api-key': key } : {}), ...(body ? { 'content-type': 'application/json' } : {}), ...headers },
      body: body ? JSON.stringify(body) : undefined,
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    const text = await res.text();
    let json = null;
    try {
      json = JSON.parse(text);
    } catch {
      json = text;
    }
    return { status: res.status, body: json };
  } catch (err) {
    return { status: err?.name === 'TimeoutError' ? 'timeout' : 'error', body: String(err) };
  }
}

/** Entry point (`npm run chaos -- [flags]`). */
export async function main(args = []) {
  const opts = parseArgs(args);
  const chainLib = require(join(root, opts.dist, 'libs', 'chain', 'src', 'index.js'));
  const { Wallet, id: topicOf, parseEther, zeroPadValue, getAddress } = await import('ethers');
  const redisPrefix = `pcpchaos${process.pid}`;
  const releaseChildren = guardChildren();
  const receiver = await startReceiver();
  const stops = [];
  const out = { startedAt: new Date().toISOString(), options: opts, requests: {}, faults: [] };
  const failures = [];
  let anvil;
  let provider;
  try {
    anvil = await chainLib.startAnvil({});
    provider = chainLib.createProvider(anvil.rpcUrl, chainLib.ANVIL_CHAIN_ID, { pollingIntervalMs: 100 });
    const address = (role) => new Wallet(chainLib.anvilKey(role)).address;
    const owner = new Wallet(chainLib.anvilKey('demoBuyer'), provider);
    const buyer = Wallet.createRandom();
    const relayerAddress = address('relayer');
    const deployed = await chainLib.deployLocalContracts({
      provider,
      deployerKey: chainLib.anvilKey('deployer'),
      termsSigner: address('termsSigner'),
      arbiter: address('arbiter'),
      mint: [{ to: owner.address, amount: 1_000_000n * 1_000_000n }, { to: buyer.address, amount: 100_000n * 1_000_000n }],
    });
    const gateway = new chainLib.EscrowGateway(provider, deployed);
    const env = {
      DATABASE_URL, REDIS_URL, REDIS_PREFIX: redisPrefix, LOG_LEVEL: process.env.BENCH_LOG_DIR ? 'info' : 'error',
      RPC_URL: anvil.rpcUrl, CHAIN_ID: String(chainLib.ANVIL_CHAIN_ID), USDC_ADDRESS: deployed.usdcAddress, ESCROW_ADDRESS: deployed.escrowAddress,
      ESCROW_DEPLOY_BLOCK: String(deployed.deployBlock), CONFIRMATIONS: String(CONFIRMATIONS), CHAIN_POLL_MS: '500',
      RELAYER_BUMP_AFTER_S: '4', RELAYER_WAIT_MS: '8000', RECONCILE_INTERVAL_S: '3600',
      TERMS_SIGNER_PRIVATE_KEY: chainLib.anvilKey('termsSigner'), RELAYER_PRIVATE_KEY: chainLib.anvilKey('relayer'), ARBITER_PRIVATE_KEY: chainLib.anvilKey('arbiter'),
      DEMO_OWNER_PRIVATE_KEY: chainLib.anvilKey('demoBuyer'),
      RATE_LIMIT_PER_MINUTE: '1000000000', RATE_LIMIT_PUBLIC_PER_MINUTE: '1000000000', AUTH_FAILURES_PER_MINUTE: '1000000000',
      WEBHOOK_ALLOW_HTTP: 'true', WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_RETRY_SCALE: '0.001', SIGNER_ENCRYPTION_KEY: `chaos-${randomBytes(16).toString('hex')}`,
    };
    await freshDatabase(DB_NAME, opts.dist, env);
    const cli = async (...a) => JSON.parse((await runNode([`${opts.dist}/src/cli.js`, ...a, '--json'], env)).trim().split('\n').at(-1));
    const seller = Wallet.createRandom();
    const org = await cli('org:create', '--name', 'Chaos Shop', '--handle', `chaos-${process.pid}`, '--payout-address', seller.address);
    const key = (await cli('key:create', '--org', org.id, '--type', 'merchant', '--scopes', 'checkout:*,webhooks:*,escrow:*')).key;
    const payee = await cli('org:create', '--name', 'Chaos Payee', '--handle', `chaospayee-${process.pid}`, '--payout-address', Wallet.createRandom().address);
    const agentOrg = await cli('org:create', '--name', 'Chaos Agent Org', '--handle', `chaosagents-${process.pid}`);
    const agent = await cli('agent:create', '--org', agentOrg.id, '--slug', `chaos-agent-${process.pid}`, '--owner-address', owner.address);
    // Every agent spend is 1.00; the limit lets all but two through, so it bites under load and the overspend check means something.
    const DAILY_LIMIT = `${Math.max(1, opts.payments + opts.escrows + opts.x402 - 2)}.00`;
    await cli('agent:policy:set', '--agent', agent.id, '--daily-limit', DAILY_LIMIT);
    const signer = await cli('agent:signer:enable', '--agent', agent.id);
    await cli('agent:fund', '--agent', agent.id, '--amount', '500.00');
    const agentKey = (await cli('key:create', '--org', agentOrg.id, '--type', 'agent', '--agent', agent.id, '--scopes', 'agent:pay,agent:balance:read,agent:escrow:fund')).key;
    const signerAddress = signer.agent?.signer?.address;
    if (!signerAddress) throw new Error(`agent:signer:enable gave no signer address: ${JSON.stringify(signer)}`);

    // From here the chain behaves like a public one: a block every 2 s, nothing mined on demand.
    await provider.send('evm_setAutomine', [false]);
    await provider.send('evm_setIntervalMining', [BLOCK_SECONDS]);

    const apis = [];
    // Two replicas of one public API (as behind a load balancer): both name api 1's address as API_BASE_URL,
    // so a challenge from one is "ours" on the other (x402 settle tells our challenges by that origin).
    apis.push(await startApi(1, opts.dist, env, stops));
    apis.push(await startApi(2, opts.dist, { ...env, API_BASE_URL: apis[0], CHECKOUT_BASE_URL: apis[0] }, stops));
    const workers = [];
    workers.push(await startWorker(1, opts.dist, env, stops), await startWorker(2, opts.dist, env, stops));
    const put = await call(apis[0], 'PUT', '/api/v1/webhook-endpoints', { key, body: { url: receiver.url } });
    if (put.status !== 200) throw new Error(`PUT /webhook-endpoints answered ${put.status}: ${JSON.stringify(put.body)}`);
    console.log(`chaos: ${opts.checkouts} checkouts, ${opts.payments} payments, ${opts.escrows} agent escrows, ${opts.x402} x402; 2 apis, 2 workers; anvil ${anvil.rpcUrl} (${BLOCK_SECONDS} s blocks, CONFIRMATIONS=${CONFIRMATIONS})`);

    // ---- load ----
    const statusCounts = {};
    const refusals = [];
    out.refusals = refusals;
    const count = (kind, status, body) => {
      const label = typeof status === 'number' && status >= 400 && body?.code ? `${status} ${body.code}` : String(status);
      if (typeof status === 'number' && status >= 400 && body?.code !== 'policy_denied') refusals.push({ kind, status, at: Date.now(), body });
      statusCounts[kind] ??= {};
      statusCounts[kind][label] = (statusCounts[kind][label] ?? 0) + 1;
    };
    const checkouts = [];
    const payments = [];
    const oneCheckout = async (i) => {
      const base = apis[i % 2];
      const created = await call(base, 'POST', '/api/v1/checkout-sessions', { key, body: { amount: '3.00', description: `chaos ${i}` } });
      count('checkout create', created.status, created.body);
      if (created.status !== 201 && created.status !== 200) return;
      const funding = await call(base, 'GET', `/checkout/${created.body.id}/funding?buyer=${buyer.address}`);
      if (funding.status !== 200) return void count('funding terms', funding.status, funding.body);
      const td = funding.body.typedData;
      const types = { ...td.types };
      delete types.EIP712Domain;
      const m = td.message;
      const body = { buyer: buyer.address, validAfter: String(m.validAfter), validBefore: String(m.validBefore), nonce: m.nonce, signature: await buyer.signTypedData(td.domain, types, m) };
      const record = { id: created.body.id, nonce: m.nonce.toLowerCase(), answered200: false, statuses: [] };
      checkouts.push(record);
      // A buyer whose relay answered 503 (relayer out of ETH) or timed out tries the same signature again, bounded.
      for (let attempt = 0; attempt < 12; attempt++) {
        const relayed = await call(apis[(i + attempt) % 2], 'POST', `/checkout/${created.body.id}/relay`, { body });
        count('relay', relayed.status, relayed.body);
        record.statuses.push(relayed.status);
        if (relayed.status === 200) {
          record.answered200 = true;
          return;
        }
        if (typeof relayed.status === 'number' && relayed.status < 500) return;
        await sleep(3000);
      }
    };
    /** One agent spend under an Idempotency-Key, retried with the same key (bounded) on 5xx and timeouts, as a client would. */
    const agentSpend = async (kind, i, path, body) => {
      const idem = `chaos-${kind.replace(' ', '-')}-${i}-${randomUUID()}`;
      for (let attempt = 0; attempt < 8; attempt++) {
        const res = await call(apis[(i + attempt) % 2], 'POST', path, { key: agentKey, headers: { 'idempotency-key': idem }, body });
        count(kind, res.status, res.body);
        if (res.status === 200 || res.status === 201) {
          payments.push({ kind, id: res.body.payment?.id ?? res.body.id });
          return;
        }
        if (typeof res.status === 'number' && res.status < 500) return;
        await sleep(3000);
      }
    };
    const onePayment = (i) => agentSpend('payment', i, '/api/v1/payments', { to: payee.handle, amount: PAYMENT_AMOUNT });
    const oneAgentEscrow = (i) => agentSpend('agent escrow', i, '/api/v1/agent-escrows', { to: payee.handle, amount: PAYMENT_AMOUNT, description: `chaos escrow ${i}` });
    // Our own challenge, settled by the agent (x402 "exact": EIP-3009 from its signer, relayed by us).
    const oneX402 = async (i) => {
      const url = `${apis[i % 2]}/api/v1/x402/challenge?to=${payee.handle}&amount=${PAYMENT_AMOUNT}`;
      const challenge = await fetch(url, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) }).catch((err) => ({ status: String(err?.name ?? err), headers: new Headers() }));
      const paymentRequired = challenge.headers.get('payment-required');
      if (challenge.status !== 402 || !paymentRequired) return void count('x402 challenge', challenge.status, null);
      await agentSpend('x402 settle', i, '/api/v1/x402/settle', { paymentRequired });
    };

    // ---- faults ----
    const relayerPending = async () => {
      const pool = await provider.send('txpool_content', []);
      const mine = Object.entries(pool.pending ?? {}).find(([a]) => a.toLowerCase() === relayerAddress.toLowerCase())?.[1] ?? {};
      return Object.values(mine).map((tx) => tx.hash);
    };
    let drops = 0;
    let stranded = 0;
    let reorgedBlocks = 0;
    let reorgedRelayerTxs = 0;
    let snapshot = null;
    const faults = [
      {
        at: 3_000,
        key: 'drop',
        name: 'drop pending relayer txs',
        run: async () => {
          // Wait (bounded) for something to drop: the relayer's transactions sit in the pool for up to a block.
          const deadline = Date.now() + 10_000;
          let hashes = [];
          while (hashes.length === 0 && Date.now() < deadline) {
            hashes = await relayerPending();
            if (!hashes.length) await sleep(100);
          }
          for (const h of hashes) await provider.send('anvil_dropTransaction', [h]);
          drops += hashes.length;
          return `${hashes.length} dropped`;
        },
      },
      {
        at: 9_000,
        key: 'fee',
        name: 'base-fee spike',
        run: async () => {
          // Spike while a relayer transaction waits in the pool, so it is stranded underpriced and must be
          // replaced (RELAYER_BUMP_AFTER_S) with the node's new fees, under RELAYER_MAX_FEE_GWEI (100).
          const deadline = Date.now() + 10_000;
          let pending = [];
          while (pending.length === 0 && Date.now() < deadline) {
            pending = await relayerPending();
            if (!pending.length) await sleep(50);
          }
          const block = await provider.getBlock('latest');
          await provider.send('anvil_setNextBlockBaseFeePerGas', ['0x' + SPIKED_BASE_FEE_WEI.toString(16)]);
          // Stranded are only those still waiting once the spiked block is mined: a transaction mined in
          // the block anvil was sealing while the spike was set never met it (a CI run counted one such
          // as stranded and then failed the replacement check for it).
          let spiked = null;
          for (const until = Date.now() + 4 * BLOCK_SECONDS * 1000; !spiked && Date.now() < until; ) {
            const head = await provider.getBlock('latest');
            if (head.baseFeePerGas >= SPIKED_BASE_FEE_WEI) spiked = head;
            else await sleep(100);
          }
          if (!spiked) return `next base fee ${SPIKED_BASE_FEE_WEI} wei set, but no block carried it within ${4 * BLOCK_SECONDS} s`;
          let waiting = 0;
          for (const hash of pending) {
            const receipt = await provider.getTransactionReceipt(hash);
            if (!receipt || receipt.blockNumber > spiked.number) waiting++;
          }
          stranded += waiting;
          return `base fee ${SPIKED_BASE_FEE_WEI} wei from block ${spiked.number} (was ${block.baseFeePerGas}), ${pending.length} relayer txs pending, ${waiting} still waiting after it`;
        },
      },
      {
        at: 13_000,
        key: 'reorg',
        name: 'reorg: snapshot',
        run: async () => {
          snapshot = { id: await provider.send('evm_snapshot', []), block: await provider.getBlockNumber() };
          return `at block ${snapshot.block}`;
        },
      },
      {
        at: 13_000 + (CONFIRMATIONS + 2) * BLOCK_SECONDS * 1000,
        key: 'reorg',
        name: 'reorg: revert',
        run: async () => {
          const head = await provider.getBlockNumber();
          // Relayer transactions the revert takes off the chain (anvil does not put them back in its pool):
          // the relayer's tender must find them gone and send them again (DESIGN §18).
          for (let b = snapshot.block + 1; b <= head; b++) {
            const block = await provider.getBlock(b, true);
            reorgedRelayerTxs += block.prefetchedTransactions.filter((tx) => tx.from.toLowerCase() === relayerAddress.toLowerCase()).length;
          }
          const ok = await provider.send('evm_revert', [snapshot.id]);
          // Interval mining goes on from the snapshot's block: the reverted blocks are re-mined with other contents.
          await provider.send('evm_setIntervalMining', [BLOCK_SECONDS]);
          reorgedBlocks = head - snapshot.block;
          return `${reorgedBlocks} blocks (${snapshot.block + 1}..${head}) reverted: ${ok}; ${reorgedRelayerTxs} relayer txs in them`;
        },
      },
      {
        at: 25_000,
        key: 'drain',
        name: 'relayer ETH drained',
        run: async () => {
          await provider.send('anvil_setBalance', [relayerAddress, '0x0']);
          await sleep(6_000);
          await provider.send('anvil_setBalance', [relayerAddress, '0x' + parseEther('100').toString(16)]);
          return 'refilled after 6 s';
        },
      },
      {
        at: 33_000,
        key: 'kill',
        name: 'SIGKILL worker',
        run: async () => {
          await workers[0].stop('SIGKILL');
          workers[0] = await startWorker(3, opts.dist, env, stops);
          return 'restarted';
        },
      },
    ];

    const started = Date.now();
    const startBlock = await provider.getBlockNumber();
    const loadMs = 36_000;
    const load = [];
    // Spread each kind evenly over the load window, interleaved, so every fault meets every kind of traffic.
    const kinds = [[opts.checkouts, oneCheckout], [opts.payments, onePayment], [opts.escrows, oneAgentEscrow], [opts.x402, oneX402]];
    const jobs = kinds.flatMap(([n, run]) => Array.from({ length: n }, (_, i) => ({ at: (i + 0.5) / n, run: () => run(i) })));
    for (const job of jobs.sort((a, b) => a.at - b.at)) load.push(sleep(job.at * loadMs).then(job.run));
    const faultRuns = faults.filter((f) => opts.faults.includes(f.key)).map((f) =>
      sleep(f.at).then(async () => {
        const t0 = Date.now();
        const note = await f.run();
        out.faults.push({ name: f.name, atMs: Date.now() - started, tookMs: Date.now() - t0, note });
        console.log(`  fault at ${((Date.now() - started) / 1000).toFixed(1)} s: ${f.name} — ${note}`);
      }),
    );
    // Faults run one after another in time; the load runs alongside them.
    await Promise.all([...load, ...faultRuns]);
    const loadDoneAt = Date.now();
    console.log(`load done after ${((loadDoneAt - started) / 1000).toFixed(1)} s; waiting for quiescence …`);

    // ---- quiescence (bounded): every answered relay's checkout funded, every payment final, reconciliation clean ----
    const deadline = Date.now() + QUIESCENCE_TIMEOUT_MS;
    let reconcile = null;
    let quiet = false;
    for (;;) {
      const states = await withPg(DB_NAME, async (c) => ({
        checkouts: (await c.query(`SELECT id::text, status FROM checkout_sessions WHERE id = ANY($1::uuid[])`, [checkouts.map((x) => x.id)])).rows,
        payments: (await c.query(`SELECT id::text, status FROM payments WHERE agent_id = $1`, [agent.id])).rows,
      }));
      const open = states.checkouts.filter((s) => checkouts.find((x) => x.id === s.id)?.answered200 && s.status === 'open').length;
      const unsettled = states.payments.filter((p) => p.status === 'pending' || p.status === 'submitted').length;
      if (open === 0 && unsettled === 0) {
        reconcile = await cli('reconcile');
        if (reconcile.clean) {
          quiet = true;
          break;
        }
      }
      if (Date.now() > deadline) {
        reconcile ??= await cli('reconcile').catch((err) => ({ clean: false, error: String(err) }));
        failures.push(`no quiescence within ${QUIESCENCE_TIMEOUT_MS / 1000} s: ${open} answered checkouts still open, ${unsettled} payments pending/submitted`);
        break;
      }
      await sleep(2000);
    }
    out.quiescenceMs = quiet ? Date.now() - loadDoneAt : null;
    await sleep(3 * BLOCK_SECONDS * 1000); // late duplicates (webhooks, second transactions) still count

    // ---- assertions against the chain ----
    const head = await provider.getBlockNumber();
    const authLogs = (await gateway.getAuthorizationLogs(deployed.deployBlock, head)).filter((l) => l.kind === 'used');
    const usedCount = (authorizer, nonce) => authLogs.filter((l) => l.authorizer.toLowerCase() === authorizer.toLowerCase() && l.nonce === nonce.toLowerCase()).length;
    const escrowEvents = await gateway.getEscrowEvents(deployed.deployBlock, head);
    const db = await withPg(DB_NAME, async (c) => ({
      checkouts: (await c.query(`SELECT s.id::text, s.status, e.escrow_key FROM checkout_sessions s LEFT JOIN escrows e ON e.checkout_session_id = s.id WHERE s.id = ANY($1::uuid[])`, [checkouts.map((x) => x.id)]).catch(() => c.query(`SELECT id::text, status, NULL AS escrow_key FROM checkout_sessions WHERE id = ANY($1::uuid[])`, [checkouts.map((x) => x.id)]))).rows,
      payments: (await c.query(`SELECT id::text, status, mode, amount::text, from_address, auth_nonce FROM payments WHERE agent_id = $1`, [agent.id])).rows,
      relayer: (await c.query(`SELECT count(*)::int AS txs, coalesce(sum(replacements), 0)::int AS replacements FROM relayer_transactions`)).rows[0],
    }));
    const funded = new Map();
    for (const e of escrowEvents) if (e.action === 'funded') funded.set(e.escrowKey.toLowerCase(), (funded.get(e.escrowKey.toLowerCase()) ?? 0) + 1);

    let relaysMovedOnce = 0;
    for (const c of checkouts) {
      const used = usedCount(buyer.address, c.nonce);
      const row = db.checkouts.find((r) => r.id === c.id);
      if (c.answered200 && used !== 1) failures.push(`checkout ${c.id}: relay answered 200, authorization used ${used} times on chain`);
      if (!c.answered200 && used > 1) failures.push(`checkout ${c.id}: authorization used ${used} times on chain`);
      if (used === 1) relaysMovedOnce++;
      if (c.answered200 && row?.status !== 'funded') failures.push(`checkout ${c.id}: relay answered 200, checkout is ${row?.status}`);
      if (row?.escrow_key && (funded.get(row.escrow_key.toLowerCase()) ?? 0) !== 1) failures.push(`checkout ${c.id}: ${funded.get(row.escrow_key.toLowerCase()) ?? 0} Funded events`);
    }
    const fundedPerEscrow = [...funded.values()];
    if (fundedPerEscrow.some((n) => n !== 1)) failures.push(`an escrow was funded ${Math.max(...fundedPerEscrow)} times`);
    // The merchant checkouts' escrows (agent escrows fund escrows of their own, held to the payment checks below).
    const merchantFunded = db.checkouts.filter((r) => r.escrow_key && funded.has(r.escrow_key.toLowerCase())).length;
    if (merchantFunded !== db.checkouts.filter((r) => r.status === 'funded').length) failures.push(`${merchantFunded} checkout escrows funded on chain, ${db.checkouts.filter((r) => r.status === 'funded').length} checkouts funded in the ledger`);

    const byStatus = {};
    let spentBase = 0n;
    for (const p of db.payments) {
      byStatus[p.mode] ??= {};
      byStatus[p.mode][p.status] = (byStatus[p.mode][p.status] ?? 0) + 1;
      const used = p.auth_nonce ? usedCount(p.from_address, p.auth_nonce) : 0;
      if (p.status === 'succeeded' && used !== 1) failures.push(`payment ${p.id} succeeded, authorization used ${used} times`);
      if (p.status === 'failed' && used !== 0) failures.push(`payment ${p.id} failed, authorization used ${used} times`);
      if (p.status === 'succeeded' || p.status === 'submitted' || p.status === 'pending') spentBase += BigInt(p.amount);
    }
    const limitBase = BigInt(DAILY_LIMIT.replace('.', '')) * 10_000n; // two decimals → six (USDC base units)
    const transferTopic = topicOf('Transfer(address,address,uint256)');
    const sentLogs = await provider.getLogs({ address: deployed.usdcAddress, fromBlock: startBlock, toBlock: head, topics: [transferTopic, zeroPadValue(getAddress(signerAddress), 32)] });
    const sentOnChain = sentLogs.filter((l) => !l.removed).reduce((a, l) => a + BigInt(l.data), 0n);
    if (spentBase > limitBase) failures.push(`agent ledger spend ${spentBase} above the daily limit ${limitBase}`);
    if (sentOnChain > limitBase) failures.push(`agent signer sent ${sentOnChain} on chain, above the daily limit ${limitBase}`);
    if (sentOnChain !== spentBase) failures.push(`agent signer sent ${sentOnChain} on chain, the ledger says ${spentBase}`);

    // Webhooks: per (object, type) exactly one webhook-id; every funded checkout heard checkout.funded.
    const perObjectType = new Map();
    for (const [id, e] of receiver.seen) {
      const k = `${e.objectId} ${e.type}`;
      perObjectType.set(k, (perObjectType.get(k) ?? new Set()).add(id));
    }
    const doubled = [...perObjectType.entries()].filter(([, ids]) => ids.size > 1);
    if (doubled.length) failures.push(`webhook events sent twice for one state change: ${doubled.map(([k]) => k).join(', ')}`);
    const fundedRows = db.checkouts.filter((r) => r.status === 'funded');
    const unheard = fundedRows.filter((r) => !perObjectType.has(`${r.id} checkout.funded`));
    if (unheard.length) failures.push(`${unheard.length} funded checkouts without a checkout.funded webhook`);
    if (!reconcile?.clean) failures.push(`reconciliation not clean: ${JSON.stringify(reconcile?.mismatches ?? reconcile)}`);
    if (stranded > 0 && db.relayer.replacements === 0) failures.push(`the fee spike stranded ${stranded} relayer transactions and none was replaced`);
    if (opts.faults.includes('drop') && drops === 0) failures.push('the drop fault found no pending relayer transaction to drop');

    Object.assign(out, {
      seconds: Number(((Date.now() - started) / 1000).toFixed(1)),
      requests: statusCounts,
      checkouts: checkouts.length,
      relaysAnswered200: checkouts.filter((c) => c.answered200).length,
      relaysMovedOnce,
      relaysNotAnswered200: checkouts.filter((c) => !c.answered200).map((c) => ({ id: c.id, answers: c.statuses, used: usedCount(buyer.address, c.nonce) })),
      checkoutsFunded: fundedRows.length,
      payments: byStatus,
      agentSpent: { ledger: spentBase.toString(), onChain: sentOnChain.toString(), limit: limitBase.toString() },
      relayerTransactions: db.relayer.txs,
      replacements: db.relayer.replacements,
      drops,
      reorgedBlocks,
      reorgedRelayerTxs,
      blocks: head - startBlock,
      webhooks: { deliveries: [...receiver.seen.values()].reduce((a, e) => a + e.count, 0), webhookIds: receiver.seen.size },
      reconcileClean: Boolean(reconcile?.clean),
    });
  } finally {
    await tearDown({ stops, provider, anvil, receiver, database: DB_NAME, redisPrefix });
    releaseChildren();
  }
  console.log(`\nchaos (2 apis, 2 workers, ${BLOCK_SECONDS} s blocks, CONFIRMATIONS=${CONFIRMATIONS}) in ${out.seconds} s`);
  console.log(`  requests: ${JSON.stringify(out.requests)}`);
  console.log(`  checkouts ${out.checkouts}: relay answered 200 for ${out.relaysAnswered200}, authorization used once for ${out.relaysMovedOnce}, funded ${out.checkoutsFunded}`);
  console.log(`  payments: ${JSON.stringify(out.payments)}; agent spent ${out.agentSpent.ledger} (ledger) / ${out.agentSpent.onChain} (chain), limit ${out.agentSpent.limit} base units`);
  console.log(`  relayer transactions ${out.relayerTransactions}, replacements ${out.replacements}, drops ${out.drops}, reorged blocks ${out.reorgedBlocks} (relayer txs in them ${out.reorgedRelayerTxs}), blocks ${out.blocks}`);
  console.log(`  webhooks: ${out.webhooks.deliveries} deliveries, ${out.webhooks.webhookIds} webhook-ids; reconciliation clean: ${out.reconcileClean}; quiescence ${out.quiescenceMs ?? 'never'} ms after the load`);
  console.log(`results: ${writeResult(`chaos-${fileStamp(new Date(out.startedAt))}.json`, JSON.stringify({ ...out, failures }, null, 2))}`);
  if (failures.length) throw new Error(`chaos failed:\n  ${failures.join('\n  ')}`);
  console.log('chaos passed');
}

if (isMain(import.meta.url)) runMain(main);
