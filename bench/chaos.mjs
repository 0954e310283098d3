// Chaos run on a chain that behaves like a public one (DESIGN §18, issue 22): anvil mining a block
// every 2 s (no automine), CONFIRMATIONS=2, two api and two worker processes (compiled dist), a
// webhook receiver, and a mixed load — checkouts funded through the pay page's gasless relay
// (POST /checkout/{id}/relay with the buyer's EIP-3009 signature), agent payments (POST /payments),
// agent escrows (POST /agent-escrows, funded gaslessly from the agent's signer) and x402 payments
// (our GET /x402/challenge settled by the agent with POST /x402/settle), every agent spend under one
// daily limit, and refunds (DESIGN §21): the payee organisation refunds part of some succeeded agent
// payments and of some agent escrows the agent released (POST …/refunds, then the payee wallet's
// EIP-3009 signature relayed by POST /refunds/{id}/submit) — while the harness injects, in this order:
//   1. dropped transactions   anvil_dropTransaction on every pending relayer transaction
//   2. a base-fee spike       anvil_setNextBlockBaseFeePerGas (x8 the current base fee)
//   3. a reorg                evm_snapshot, blocks mined on top (deeper than CONFIRMATIONS), evm_revert
//   4. relayer ETH drained    anvil_setBalance(relayer, 0), refilled a few seconds later
//   5. a worker SIGKILL       every worker killed at once while it holds work, two new ones started
// Each fault proves it happened (DESIGN §22): the drop left the node without the transactions, the spike
// outbid one (a replacement with its nonce and a higher fee was mined, read from the chain), the revert
// removed a relayer transaction and a funding (no receipt right after it), a relay answered 503 while the
// relayer was dry, and the workers were killed holding work (an active job or an unmined transaction).
// The run judges by what the clients were told: it keeps every answer (id, status, amount, payee), waits
// (bounded) until everything it was told of is final through the API, reads `cli reconcile` once, then
// asserts: each object's final state agrees with the chain (a Transfer of that amount to that payee, or
// none; a 200 whose row answers 404 fails); no answer is a 5xx other than 503, and every 503 carries
// Retry-After (counted per fault window); what was told succeeded/funded and later taken back by the
// reorg is judged by its final state and counted; every organisation has an endpoint and each object's
// last event renders its final state; authorizations used once, the daily limit held, reconciliation clean;
// every refund the payee was told succeeded has its Transfer (payee → agent signer, exactly its amount) on
// the final chain, its authorization used once (none for a failed one), and the payee's ledger reconciles
// with the chain both ways (`cli balance:reconcile`).
//
//   npm run chaos                                   20 checkouts, 30 payments, 10 agent escrows, 10 x402, 10 refunds
//   npm run chaos -- --checkouts 4 --payments 6 --escrows 3 --x402 3     the short variant CI runs (3 refunds)
//   flags: --checkouts N  --payments N  --escrows N  --x402 N  --refunds N (default max(2, ⌈(payments + escrows) / 4⌉))
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
// Per run, so two runs on one Postgres (two worktrees) never drop each other's database; dropped at the end.
const DB_NAME = `pcp_chaos_${process.pid}`;
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
/** How long the relayer stays without ETH in the drain fault. */
const DRAIN_MS = 6_000;
/** A 503 this long after a fault ended still counts to that fault's window (its effects outlast it). */
const FAULT_AFTERMATH_MS = 10_000;
const CHECKOUT_AMOUNT = '3.00';
/** Agent spends the faults add to the load (the drain's probe payment). */
const PROBE_PAYMENTS = 1;
const REQUEST_TIMEOUT_MS = 20_000;
/** What each refund gives back of its 1.00 source (a partial refund). */
const REFUND_AMOUNT = '0.40';
/** How long a refund job waits for a source it may refund (a succeeded payment, a funded or released escrow). */
const REFUND_SOURCE_WAIT_MS = 90_000;

function parseArgs(args) {
  const opts = { checkouts: 20, payments: 30, escrows: null, x402: null, refunds: null, dist: 'dist', faults: DEFAULT_FAULTS };
  for (const { flag, arg, value } of eachFlag(args)) {
    if (flag === '--checkouts') opts.checkouts = Number(value());
    else if (flag === '--payments') opts.payments = Number(value());
    else if (flag === '--escrows') opts.escrows = Number(value());
    else if (flag === '--x402') opts.x402 = Number(value());
    else if (flag === '--refunds') opts.refunds = Number(value());
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
  opts.refunds ??= Math.max(2, Math.ceil((opts.payments + opts.escrows) / 4));
  for (const k of ['checkouts', 'payments']) if (!Number.isInteger(opts[k]) || opts[k] < 1 || opts[k] > 500) throw new Error(`--${k} must be a whole number in 1..500`);
  if (!Number.isInteger(opts.refunds) || opts.refunds < 0 || opts.refunds > opts.payments + opts.escrows) throw new Error('--refunds must be a whole number in 0..payments + escrows');
  for (const k of ['escrows', 'x402']) if (!Number.isInteger(opts[k]) || opts[k] < 0 || opts[k] > 500) throw new Error(`--${k} must be a whole number in 0..500`);
  return opts;
}

/**
 * Records every delivery: per webhook-id its count, event type, object id, the object's status as the
 * event rendered it, the event's createdAt and the order it first arrived in.
 */
async function startReceiver() {
  const seen = new Map();
  let arrivals = 0;
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const id = String(req.headers['webhook-id']);
      let type = null;
      let objectId = null;
      let status = null;
      let createdAt = null;
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        type = body.type ?? null;
        objectId = body.data?.object?.id ?? body.data?.id ?? null;
        status = body.data?.object?.status ?? null;
        createdAt = body.createdAt ?? null;
      } catch {
        /* counted with a null type */
      }
      const entry = seen.get(id) ?? { count: 0, type, objectId, status, createdAt, arrival: arrivals++ };
      entry.count++;
      seen.set(id, entry);
      res.writeHead(200).end('ok');
    });
  });
  await new Promise((resolve) => server.listen(0, HOST, resolve));
  return { url: `http://${HOST}:${server.address().port}/hook`, seen, close: () => new Promise((r) => { server.closeAllConnections(); server.close(r); }) };
}

/**
 * One HTTP call with a deadline: `{ status, body, retryAfter }`, status 'timeout'/'error' when there
 * was no answer; `retryAfter` is the answer's Retry-After header (null when absent).
 */
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
    return { status: res.status, body: json, retryAfter: res.headers.get('retry-after') };
  } catch (err) {
    return { status: err?.name === 'TimeoutError' ? 'timeout' : 'error', body: String(err), retryAfter: null };
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
    const { escrow: gateway, usdc } = chainLib.connectChain(provider, deployed);
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
    // The payee's wallet signs its refunds (DESIGN §21: the receiving wallet's EIP-3009 authorization).
    const payeeWallet = Wallet.createRandom();
    const payeeAddress = payeeWallet.address;
    const payee = await cli('org:create', '--name', 'Chaos Payee', '--handle', `chaospayee-${process.pid}`, '--payout-address', payeeAddress);
    // The payee organisation is the seller of every agent escrow: it reads those checkouts and hears their events.
    const payeeKey = (await cli('key:create', '--org', payee.id, '--type', 'merchant', '--scopes', 'checkout:*,webhooks:*,escrow:*,refund:read,refund:write,balance:read')).key;
    const agentOrg = await cli('org:create', '--name', 'Chaos Agent Org', '--handle', `chaosagents-${process.pid}`);
    const agentOrgKey = (await cli('key:create', '--org', agentOrg.id, '--type', 'merchant', '--scopes', 'webhooks:*')).key;
    const agent = await cli('agent:create', '--org', agentOrg.id, '--slug', `chaos-agent-${process.pid}`, '--owner-address', owner.address);
    // Every agent spend is 1.00; the limit lets all but two through, so it bites under load and the overspend check means something.
    const DAILY_LIMIT = `${Math.max(1, opts.payments + opts.escrows + opts.x402 + PROBE_PAYMENTS - 2)}.00`;
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
    // Every organisation in the run has an endpoint, so no event of any of them goes unheard.
    for (const k of [key, payeeKey, agentOrgKey]) {
      const put = await call(apis[0], 'PUT', '/api/v1/webhook-endpoints', { key: k, body: { url: receiver.url } });
      if (put.status !== 200) throw new Error(`PUT /webhook-endpoints answered ${put.status}: ${JSON.stringify(put.body)}`);
    }
    console.log(`chaos: ${opts.checkouts} checkouts, ${opts.payments} payments, ${opts.escrows} agent escrows, ${opts.x402} x402, ${opts.refunds} refunds; 2 apis, 2 workers; anvil ${anvil.rpcUrl} (${BLOCK_SECONDS} s blocks, CONFIRMATIONS=${CONFIRMATIONS})`);

    // ---- the ledger by the clients: every answer a client got, and every object it was told of ----
    let started = Date.now();
    const answers = []; // { kind, status, code, retryAfter, atMs }
    const statusCounts = {};
    const refusals = [];
    out.refusals = refusals;
    const count = (kind, res) => {
      const { status, body } = res;
      const code = body && typeof body === 'object' ? body.code ?? null : null;
      const reason = body && typeof body === 'object' ? body.details?.reason ?? null : null;
      answers.push({ kind, status, code, reason, retryAfter: res.retryAfter ?? null, atMs: Date.now() - started });
      const label = typeof status === 'number' && status >= 400 && code ? `${status} ${code}` : String(status);
      if (typeof status === 'number' && status >= 400 && code !== 'policy_denied') refusals.push({ kind, status, atMs: Date.now() - started, retryAfter: res.retryAfter ?? null, body });
      statusCounts[kind] ??= {};
      statusCounts[kind][label] = (statusCounts[kind][label] ?? 0) + 1;
    };
    /** Checkouts a buyer relayed: { id, nonce, answered200, statuses, seen: [status…], final }. */
    const checkouts = [];
    /** Agent spends answered 200/201: { kind, id, answered, amount, expectTo, checkoutSessionId, attempts, seen, final }. */
    const payments = [];
    const oneCheckout = async (i) => {
      const base = apis[(typeof i === 'number' ? i : 1) % 2];
      const created = await call(base, 'POST', '/api/v1/checkout-sessions', { key, body: { amount: CHECKOUT_AMOUNT, description: `chaos ${i}` } });
      count('checkout create', created);
      if (created.status !== 201 && created.status !== 200) return;
      const funding = await call(base, 'GET', `/checkout/${created.body.id}/funding?buyer=${buyer.address}`);
      if (funding.status !== 200) return void count('funding terms', funding);
      const td = funding.body.typedData;
      const types = { ...td.types };
      delete types.EIP712Domain;
      const m = td.message;
      const body = { buyer: buyer.address, validAfter: String(m.validAfter), validBefore: String(m.validBefore), nonce: m.nonce, signature: await buyer.signTypedData(td.domain, types, m) };
      const record = { id: created.body.id, label: String(i), nonce: m.nonce.toLowerCase(), answered200: false, statuses: [], attempts: [], seen: [], final: null };
      checkouts.push(record);
      // A buyer whose relay answered 503 (relayer out of ETH) or timed out tries the same signature again, bounded.
      for (let attempt = 0; attempt < 12; attempt++) {
        const relayed = await call(apis[(attempt + (typeof i === 'number' ? i : 0)) % 2], 'POST', `/checkout/${created.body.id}/relay`, { body });
        count('relay', relayed);
        record.statuses.push(relayed.status);
        record.attempts.push({ status: relayed.status, code: relayed.body?.code ?? null, atMs: Date.now() - started });
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
      const attempts = [];
      for (let attempt = 0; attempt < 10; attempt++) {
        const res = await call(apis[(attempt + (typeof i === 'number' ? i : 0)) % 2], 'POST', path, { key: agentKey, headers: { 'idempotency-key': idem }, body });
        count(kind, res);
        attempts.push({ status: res.status, code: res.body?.code ?? null, atMs: Date.now() - started });
        if (res.status === 200 || res.status === 201) {
          const p = res.body.payment ?? res.body;
          payments.push({
            kind, label: String(i), id: p.id, answered: p.status, amount: PAYMENT_AMOUNT,
            // An agent escrow's transfer goes into the escrow contract; every other spend to the payee's payout address.
            expectTo: kind === 'agent escrow' ? deployed.escrowAddress : payeeAddress,
            checkoutSessionId: res.body.checkoutSessionId ?? null, attempts, seen: [p.status], final: null,
          });
          return;
        }
        if (typeof res.status === 'number' && res.status < 500) return;
        await sleep(3000);
      }
      payments.push({ kind, label: String(i), id: null, answered: null, attempts, seen: [], final: null });
    };
    const onePayment = (i) => agentSpend('payment', i, '/api/v1/payments', { to: payee.handle, amount: PAYMENT_AMOUNT });
    const oneAgentEscrow = (i) => agentSpend('agent escrow', i, '/api/v1/agent-escrows', { to: payee.handle, amount: PAYMENT_AMOUNT, description: `chaos escrow ${i}` });
    // Our own challenge, settled by the agent (x402 "exact": EIP-3009 from its signer, relayed by us).
    const oneX402 = async (i) => {
      const url = `${apis[i % 2]}/api/v1/x402/challenge?to=${payee.handle}&amount=${PAYMENT_AMOUNT}`;
      const challenge = await fetch(url, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) }).catch((err) => ({ status: String(err?.name ?? err), headers: new Headers() }));
      const paymentRequired = challenge.headers.get('payment-required');
      if (challenge.status !== 402 || !paymentRequired) return void count('x402 challenge', { status: challenge.status, body: null, retryAfter: challenge.headers.get('retry-after') });
      await agentSpend('x402 settle', i, '/api/v1/x402/settle', { paymentRequired });
    };

    /** Refunds the payee was answered for: { kind: 'refund', source, id, answered, amount, attempts, seen, final }. */
    const refunds = [];
    /** Sources a refund job took, so no two refund the same one. */
    const refundSources = new Set();
    /** A call retried with the same Idempotency-Key (bounded) on 5xx and timeouts, as a client would. */
    const idempotentCall = async (kind, i, path, callKey, body, attempts) => {
      const idem = `chaos-${kind.replaceAll(' ', '-')}-${i}-${randomUUID()}`;
      for (let attempt = 0; attempt < 10; attempt++) {
        const res = await call(apis[(attempt + (typeof i === 'number' ? i : 0)) % 2], 'POST', path, { key: callKey, headers: { 'idempotency-key': idem }, body });
        count(kind, res);
        attempts.push({ kind, status: res.status, code: res.body?.code ?? null, atMs: Date.now() - started });
        if (typeof res.status === 'number' && res.status < 500) return res;
        await sleep(3000);
      }
      return null;
    };
    /**
     * One refund (DESIGN §21) by the payee organisation of a source that received 1.00: a succeeded agent
     * payment (`payment`), or an agent escrow the agent then releases (`release`: the checkout is refunded
     * once released). The payee's wallet signs the typed data; the submit is relayed (signature path).
     */
    const oneRefund = async (i, sourceKind) => {
      const attempts = [];
      const pick = () => payments.find((p) => p.id && !refundSources.has(p.id) && p.final?.status === 'succeeded' && p.kind === (sourceKind === 'release' ? 'agent escrow' : 'payment'));
      const source = await waitFor(async () => pick() ?? null, REFUND_SOURCE_WAIT_MS, 500);
      if (!source) return void refunds.push({ kind: 'refund', label: String(i), source: sourceKind, id: null, note: 'no source in time', attempts, seen: [], final: null });
      refundSources.add(source.id);
      let path = `/api/v1/payments/${source.id}/refunds`;
      if (sourceKind === 'release') {
        const checkoutStatus = async () => (await call(apis[0], 'GET', `/api/v1/checkout-sessions/${source.checkoutSessionId}`, { key: payeeKey })).body?.status ?? null;
        await waitFor(async () => (await checkoutStatus()) === 'funded', 60_000, 1000);
        const released = await idempotentCall('escrow release', i, `/api/v1/agent-escrows/${source.id}/release`, agentKey, { confirm: true }, attempts);
        if (released?.status !== 200 && released?.status !== 201) return void refunds.push({ kind: 'refund', label: String(i), source: sourceKind, id: null, note: `release answered ${released?.status}: ${JSON.stringify(released?.body)}`, attempts, seen: [], final: null });
        if (!(await waitFor(async () => (await checkoutStatus()) === 'released', 90_000, 1000))) return void refunds.push({ kind: 'refund', label: String(i), source: sourceKind, id: null, note: 'not released in time', attempts, seen: [], final: null });
        path = `/api/v1/checkout-sessions/${source.checkoutSessionId}/refunds`;
      }
      const created = await idempotentCall('refund create', i, path, payeeKey, { amount: REFUND_AMOUNT, reason: `chaos ${sourceKind} ${i}` }, attempts);
      if (created?.status !== 200) return void refunds.push({ kind: 'refund', label: String(i), source: sourceKind, id: null, note: `create answered ${created?.status}: ${JSON.stringify(created?.body)}`, attempts, seen: [], final: null });
      const td = created.body.typedData;
      const types = { ...td.types };
      delete types.EIP712Domain;
      const signature = await payeeWallet.signTypedData(td.domain, types, td.message);
      const rec = { kind: 'refund', label: String(i), source: sourceKind, sourceId: sourceKind === 'release' ? source.checkoutSessionId : source.id, id: created.body.id, nonce: td.message.nonce.toLowerCase(), answered: null, amount: REFUND_AMOUNT, attempts, seen: [created.body.status], final: null };
      refunds.push(rec);
      const submitted = await idempotentCall('refund submit', i, `/api/v1/refunds/${rec.id}/submit`, payeeKey, { signature }, attempts);
      if (submitted?.status === 200) {
        rec.answered = submitted.body.status;
        if (rec.seen.at(-1) !== submitted.body.status) rec.seen.push(submitted.body.status);
      }
    };

    /** Reads one object back through the API, as its client would: its status joins `seen` when it changed. */
    const readBack = async (rec) => {
      if (!rec.id) return null;
      const res = rec.kind === undefined
        ? await call(apis[0], 'GET', `/api/v1/checkout-sessions/${rec.id}`, { key })
        : rec.kind === 'refund'
          ? await call(apis[rec.label.length % 2], 'GET', `/api/v1/refunds/${rec.id}`, { key: payeeKey })
          : await call(apis[1], 'GET', `/api/v1/payments/${rec.id}`, { key: agentKey });
      count(rec.kind === undefined ? 'read checkout' : rec.kind === 'refund' ? 'read refund' : 'read payment', res);
      rec.lastRead = res.status;
      if (res.status === 200) {
        rec.final = res.body;
        if (rec.seen.at(-1) !== res.body.status) rec.seen.push(res.body.status);
      }
      return res;
    };
    let polling = true;
    // Every 2 s, every object the clients were told of is read back, so a state that later went back is seen.
    const poller = (async () => {
      while (polling) {
        for (const rec of [...checkouts.filter((c) => c.answered200), ...payments, ...refunds]) if (polling) await readBack(rec);
        await sleep(2000);
      }
    })();

    // ---- the chain, watched: every relayer transaction seen mined in any block (a reorg may remove it later) ----
    const minedSeen = []; // { hash, nonce, to, data, maxFeePerGas, blockNumber, blockHash }
    let watchedTo = await provider.getBlockNumber();
    let watching = true;
    const watchBlocks = async () => {
      const head = await provider.getBlockNumber();
      if (head < watchedTo) watchedTo = head; // a revert: the numbers after it are mined again with other contents
      for (let b = watchedTo + 1; b <= head; b++) {
        const block = await provider.getBlock(b, true);
        if (!block) break;
        for (const tx of block.prefetchedTransactions) {
          if (tx.from.toLowerCase() !== relayerAddress.toLowerCase()) continue;
          minedSeen.push({ hash: tx.hash, nonce: tx.nonce, to: tx.to, data: tx.data, maxFeePerGas: tx.maxFeePerGas ?? tx.gasPrice, blockNumber: block.number, blockHash: block.hash });
        }
        watchedTo = b;
      }
    };
    const watcher = (async () => {
      while (watching) {
        await watchBlocks().catch(() => {});
        await sleep(250);
      }
    })();

    // ---- faults: each one proves it happened (DESIGN §22, "Proof of faults") ----
    const relayerPending = async () => {
      const pool = await provider.send('txpool_content', []);
      const mine = Object.entries(pool.pending ?? {}).find(([a]) => a.toLowerCase() === relayerAddress.toLowerCase())?.[1] ?? {};
      return Object.values(mine).map((tx) => ({ hash: tx.hash, nonce: Number(BigInt(tx.nonce)), to: tx.to, data: tx.input, maxFeePerGas: BigInt(tx.maxFeePerGas ?? tx.gasPrice) }));
    };
    const waitFor = async (what, ms, step = 100) => {
      const deadline = Date.now() + ms;
      for (;;) {
        const v = await what();
        if (v || Date.now() > deadline) return v;
        await sleep(step);
      }
    };
    /** BullMQ jobs held by a worker right now (the active lists of every queue of this run). */
    const activeJobs = async () => {
      const { Redis } = await import('ioredis');
      const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
      try {
        await redis.connect();
        const held = [];
        let cursor = '0';
        do {
          const [next, keys] = await redis.scan(cursor, 'MATCH', `${redisPrefix}:*:active`, 'COUNT', 1000);
          cursor = next;
          for (const k of keys) for (const id of await redis.lrange(k, 0, -1)) held.push({ queue: k.slice(redisPrefix.length + 1, -':active'.length), id });
        } while (cursor !== '0');
        return held;
      } finally {
        redis.disconnect();
      }
    };
    const proofs = { drop: null, fee: null, reorg: null, drain: null, kill: null };
    let drops = 0;
    let snapshot = null;
    const windows = []; // { key, startMs, endMs }
    const faults = [
      {
        at: 3_000,
        key: 'drop',
        name: 'drop pending relayer txs',
        run: async () => {
          // Wait (bounded) for something to drop: the relayer's transactions sit in the pool for up to a block.
          const pending = (await waitFor(async () => { const p = await relayerPending(); return p.length ? p : null; }, 10_000)) ?? [];
          for (const tx of pending) await provider.send('anvil_dropTransaction', [tx.hash]);
          // Proof: the node no longer knows them (no receipt, not in the pool).
          const gone = [];
          const inPool = new Set((await relayerPending()).map((t) => t.hash));
          for (const tx of pending) if (!inPool.has(tx.hash) && !(await provider.getTransactionReceipt(tx.hash))) gone.push(tx);
          drops += gone.length;
          proofs.drop = { dropped: gone.map((t) => ({ hash: t.hash, nonce: t.nonce, to: t.to, data: t.data })) };
          return `${pending.length} dropped, ${gone.length} gone from the node`;
        },
      },
      {
        at: 9_000,
        key: 'fee',
        name: 'base-fee spike',
        run: async () => {
          // Spike while a relayer transaction waits in the pool, so it is stranded underpriced and must be
          // replaced (RELAYER_BUMP_AFTER_S) with the node's new fees, under RELAYER_MAX_FEE_GWEI (100).
          // Stranded are only those still waiting once the spiked block is mined (one mined in the block
          // being sealed never met the spike); up to three tries, the base fee set back between them.
          const notes = [];
          const outbid = [];
          for (let attempt = 1; attempt <= 3 && outbid.length === 0; attempt++) {
            const pending = (await waitFor(async () => { const p = await relayerPending(); return p.length ? p : null; }, 10_000, 50)) ?? [];
            const before = await provider.getBlock('latest');
            await provider.send('anvil_setNextBlockBaseFeePerGas', ['0x' + SPIKED_BASE_FEE_WEI.toString(16)]);
            const spiked = await waitFor(async () => { const h = await provider.getBlock('latest'); return h.baseFeePerGas >= SPIKED_BASE_FEE_WEI ? h : null; }, 4 * BLOCK_SECONDS * 1000);
            if (!spiked) { notes.push(`try ${attempt}: no block carried the spike`); continue; }
            for (const tx of pending) {
              const receipt = await provider.getTransactionReceipt(tx.hash);
              if ((!receipt || receipt.blockNumber > spiked.number) && tx.maxFeePerGas < SPIKED_BASE_FEE_WEI) outbid.push({ ...tx, spikedBlock: spiked.number });
            }
            notes.push(`try ${attempt}: base fee ${SPIKED_BASE_FEE_WEI} wei from block ${spiked.number} (was ${before.baseFeePerGas}), ${pending.length} relayer txs pending, ${outbid.filter((t) => t.spikedBlock === spiked.number).length} outbid`);
            if (!outbid.length) await provider.send('anvil_setNextBlockBaseFeePerGas', ['0x' + before.baseFeePerGas.toString(16)]);
          }
          proofs.fee = { outbid: outbid.map((t) => ({ hash: t.hash, nonce: t.nonce, maxFeePerGas: t.maxFeePerGas.toString() })) };
          return notes.join('; ');
        },
      },
      {
        at: 13_000,
        key: 'reorg',
        name: 'reorg: snapshot',
        run: async () => {
          snapshot = { id: await provider.send('evm_snapshot', []), block: await provider.getBlockNumber() };
          // A checkout relayed right after the snapshot, so a funding is among what the revert removes.
          load.push(oneCheckout('reorg-probe'));
          return `at block ${snapshot.block}`;
        },
      },
      {
        at: 13_000 + (CONFIRMATIONS + 2) * BLOCK_SECONDS * 1000,
        key: 'reorg',
        name: 'reorg: revert',
        run: async () => {
          // Bounded wait until the blocks after the snapshot hold a relayer transaction and a funding.
          const inWindow = async () => {
            const head = await provider.getBlockNumber();
            if (head < snapshot.block + CONFIRMATIONS + 1) return null;
            const relayed = [];
            for (let b = snapshot.block + 1; b <= head; b++) {
              const block = await provider.getBlock(b, true);
              relayed.push(...block.prefetchedTransactions.filter((tx) => tx.from.toLowerCase() === relayerAddress.toLowerCase()).map((tx) => tx.hash));
            }
            const fundings = (await gateway.getEscrowEvents(snapshot.block + 1, head)).filter((e) => e.action === 'funded').map((e) => e.txHash);
            return relayed.length && fundings.length ? { head, relayed, fundings } : null;
          };
          const seen = (await waitFor(inWindow, 30_000, 500)) ?? { head: await provider.getBlockNumber(), relayed: [], fundings: [] };
          const ok = await provider.send('evm_revert', [snapshot.id]);
          // Proof, read before anything is mined again: the node has no receipt for what the revert removed.
          const removedRelayed = [];
          for (const h of seen.relayed) if (!(await provider.getTransactionReceipt(h))) removedRelayed.push(h);
          const removedFundings = [];
          for (const h of seen.fundings) if (h && !(await provider.getTransactionReceipt(h))) removedFundings.push(h);
          // Interval mining goes on from the snapshot's block: the reverted blocks are re-mined with other contents.
          await provider.send('evm_setIntervalMining', [BLOCK_SECONDS]);
          proofs.reorg = { reverted: ok, blocks: seen.head - snapshot.block, removedRelayerTxs: removedRelayed, removedFundings };
          return `${seen.head - snapshot.block} blocks (${snapshot.block + 1}..${seen.head}) reverted: ${ok}; removed ${removedRelayed.length} relayer txs, ${removedFundings.length} fundings`;
        },
      },
      {
        at: 27_000,
        key: 'drain',
        name: 'relayer ETH drained',
        run: async () => {
          await provider.send('anvil_setBalance', [relayerAddress, '0x0']);
          const drainedAtMs = Date.now() - started;
          // Probes while the relayer is dry (beside the load): a checkout relay and an agent payment, retried as clients do.
          const probes = [oneCheckout('drain-probe'), onePayment('drain-probe')];
          load.push(...probes);
          await sleep(DRAIN_MS);
          await provider.send('anvil_setBalance', [relayerAddress, '0x' + parseEther('100').toString(16)]);
          proofs.drain = { startMs: drainedAtMs, endMs: Date.now() - started };
          return `refilled after ${DRAIN_MS / 1000} s`;
        },
      },
      {
        at: 35_000,
        key: 'kill',
        name: 'SIGKILL every worker',
        run: async () => {
          // Work in flight: a job a worker holds, or a relayer transaction broadcast and unmined (bounded wait).
          const held = await waitFor(async () => {
            const [jobs, pending] = await Promise.all([activeJobs(), relayerPending()]);
            return jobs.length || pending.length ? { jobs, pending } : null;
          }, 15_000, 50);
          // Every worker at once, so the work in flight was certainly held by a killed process.
          await Promise.all(workers.map((w) => w.stop('SIGKILL')));
          workers.splice(0, workers.length, await startWorker(3, opts.dist, env, stops), await startWorker(4, opts.dist, env, stops));
          proofs.kill = { jobs: held?.jobs ?? [], pending: (held?.pending ?? []).map((t) => ({ hash: t.hash, nonce: t.nonce, to: t.to, data: t.data })) };
          return `killed holding ${held?.jobs.length ?? 0} active jobs and ${held?.pending.length ?? 0} unmined relayer txs; 2 workers restarted`;
        },
      },
    ];

    started = Date.now();
    const startBlock = await provider.getBlockNumber();
    const loadMs = 36_000;
    const load = [];
    // Spread each kind evenly over the load window, interleaved, so every fault meets every kind of traffic.
    const kinds = [[opts.checkouts, oneCheckout], [opts.payments, onePayment], [opts.escrows, oneAgentEscrow], [opts.x402, oneX402]];
    const jobs = kinds.flatMap(([n, run]) => Array.from({ length: n }, (_, i) => ({ at: (i + 0.5) / n, run: () => run(i) })));
    // Refunds start once sources can have settled, spread over the rest of the window (the reorg, drain and kill meet them).
    const releaseRefunds = Math.min(opts.escrows, Math.max(Math.ceil(opts.refunds / 3), opts.refunds - opts.payments));
    for (let i = 0; i < opts.refunds; i++) jobs.push({ at: 0.25 + (0.6 * (i + 0.5)) / opts.refunds, run: () => oneRefund(i, i < releaseRefunds ? 'release' : 'payment') });
    for (const job of jobs.sort((a, b) => a.at - b.at)) load.push(sleep(job.at * loadMs).then(job.run));
    const faultRuns = faults.filter((f) => opts.faults.includes(f.key)).map((f) =>
      sleep(f.at).then(async () => {
        const t0 = Date.now();
        const note = await f.run();
        windows.push({ key: f.key, name: f.name, startMs: t0 - started, endMs: Date.now() - started });
        out.faults.push({ name: f.name, atMs: t0 - started, tookMs: Date.now() - t0, note });
        console.log(`  fault at ${((t0 - started) / 1000).toFixed(1)} s: ${f.name} — ${note}`);
      }),
    );
    // Faults run one after another in time; the load runs alongside them (faults add probes to it).
    await Promise.all(faultRuns);
    for (let settled = 0; settled < load.length; ) {
      const n = load.length;
      await Promise.all(load.slice(settled, n));
      settled = n;
    }
    const loadDoneAt = Date.now();
    console.log(`load done after ${((loadDoneAt - started) / 1000).toFixed(1)} s; waiting for quiescence …`);

    // ---- quiescence (bounded), judged through the API: every object the clients were told of is final ----
    const deadline = Date.now() + QUIESCENCE_TIMEOUT_MS;
    let quiet = false;
    for (;;) {
      await sleep(2000);
      const answered = checkouts.filter((c) => c.answered200);
      const open = answered.filter((c) => c.final?.status === 'open').length;
      const unsettled = payments.filter((p) => p.id && (!p.final || p.final.status === 'pending' || p.final.status === 'submitted')).length;
      const refundsOpen = refunds.filter((r) => r.id && (!r.final || r.final.status === 'pending' || r.final.status === 'requires_signature')).length;
      if (open === 0 && unsettled === 0 && refundsOpen === 0 && answered.every((c) => c.final)) {
        quiet = true;
        break;
      }
      if (Date.now() > deadline) {
        failures.push(`no quiescence within ${QUIESCENCE_TIMEOUT_MS / 1000} s: ${open} answered checkouts still open, ${unsettled} payments pending/submitted, ${refundsOpen} refunds open`);
        break;
      }
    }
    out.quiescenceMs = quiet ? Date.now() - loadDoneAt : null;
    await sleep(3 * BLOCK_SECONDS * 1000); // late duplicates (webhooks, second transactions) still count
    polling = false;
    await poller;
    // One last read of everything, then reconciliation read once (never polled until clean).
    for (const rec of [...checkouts.filter((c) => c.answered200), ...payments, ...refunds]) await readBack(rec);
    const reconcile = await cli('reconcile').catch((err) => ({ clean: false, error: String(err) }));
    // The payee's ledger (escrow releases, payments, x402, refunds) against the chain, both ways, once.
    const ledger = await cli('balance:reconcile', '--org', payee.id, '--from', new Date(Date.now() - 86_400_000).toISOString(), '--to', new Date(Date.now() + 86_400_000).toISOString()).catch((err) => ({ clean: false, error: String(err) }));
    watching = false;
    await watcher;
    await watchBlocks();

    // ---- assertions against the chain ----
    const head = await provider.getBlockNumber();
    const onFinalChain = async (hash) => Boolean(hash && (await provider.getTransactionReceipt(hash)));
    const authLogs = (await usdc.getAuthorizationLogs(deployed.deployBlock, head)).filter((l) => l.kind === 'used');
    const usedCount = (authorizer, nonce) => authLogs.filter((l) => l.authorizer.toLowerCase() === authorizer.toLowerCase() && l.nonce === nonce.toLowerCase()).length;
    const escrowEvents = await gateway.getEscrowEvents(deployed.deployBlock, head);
    const db = await withPg(DB_NAME, async (c) => ({
      checkouts: (await c.query(`SELECT s.id::text, s.status, e.escrow_key FROM checkout_sessions s LEFT JOIN escrows e ON e.checkout_session_id = s.id WHERE s.id = ANY($1::uuid[])`, [checkouts.map((x) => x.id)]).catch(() => c.query(`SELECT id::text, status, NULL AS escrow_key FROM checkout_sessions WHERE id = ANY($1::uuid[])`, [checkouts.map((x) => x.id)]))).rows,
      payments: (await c.query(`SELECT id::text, status, mode, amount::text, from_address, auth_nonce FROM payments WHERE agent_id = $1`, [agent.id])).rows,
      relayer: (await c.query(`SELECT count(*)::int AS txs FROM relayer_transactions`)).rows[0],
    }));
    const funded = new Map();
    for (const e of escrowEvents) if (e.action === 'funded') funded.set(e.escrowKey.toLowerCase(), (funded.get(e.escrowKey.toLowerCase()) ?? 0) + 1);

    // Checkouts: what the buyer was told, read back through the API, against the chain.
    let relaysMovedOnce = 0;
    for (const c of checkouts) {
      const used = usedCount(buyer.address, c.nonce);
      const row = db.checkouts.find((r) => r.id === c.id);
      if (c.answered200 && c.lastRead === 404) failures.push(`checkout ${c.id}: relay answered 200, GET answers 404`);
      if (c.answered200 && used !== 1) failures.push(`checkout ${c.id}: relay answered 200, authorization used ${used} times on chain`);
      if (!c.answered200 && used > 1) failures.push(`checkout ${c.id}: authorization used ${used} times on chain`);
      if (used === 1) relaysMovedOnce++;
      if (c.answered200 && c.final?.status !== 'funded') failures.push(`checkout ${c.id}: relay answered 200, the API says ${c.final?.status}`);
      if (c.final?.status === 'funded' && (funded.get(row?.escrow_key?.toLowerCase()) ?? 0) !== 1) failures.push(`checkout ${c.id}: the API says funded, ${funded.get(row?.escrow_key?.toLowerCase()) ?? 0} Funded events on the final chain`);
      if (row?.escrow_key && (funded.get(row.escrow_key.toLowerCase()) ?? 0) > 1) failures.push(`checkout ${c.id}: ${funded.get(row.escrow_key.toLowerCase())} Funded events`);
    }
    const fundedPerEscrow = [...funded.values()];
    if (fundedPerEscrow.some((n) => n !== 1)) failures.push(`an escrow was funded ${Math.max(...fundedPerEscrow)} times`);

    // Agent spends: what the agent was told, read back through the API, against the chain's Transfer logs.
    const transferTopic = topicOf('Transfer(address,address,uint256)');
    const byStatus = {};
    let spentBase = 0n;
    for (const p of payments) {
      if (!p.id) continue;
      const status = p.final?.status ?? `HTTP ${p.lastRead}`;
      byStatus[p.kind] ??= {};
      byStatus[p.kind][status] = (byStatus[p.kind][status] ?? 0) + 1;
      if (p.lastRead === 404) failures.push(`${p.kind} ${p.id}: answered ${p.answered}, GET /payments/{id} answers 404`);
      const row = db.payments.find((r) => r.id === p.id);
      const used = row?.auth_nonce ? usedCount(row.from_address, row.auth_nonce) : 0;
      if (status === 'succeeded') {
        const receipt = p.final.txHash ? await provider.getTransactionReceipt(p.final.txHash) : null;
        const amount = BigInt(p.amount.replace('.', '')) * 10_000n;
        const moved = receipt?.status === 1 && receipt.logs.some((l) => l.address.toLowerCase() === deployed.usdcAddress.toLowerCase() && l.topics[0] === transferTopic
          && l.topics[1] === zeroPadValue(getAddress(signerAddress), 32).toLowerCase() && l.topics[2] === zeroPadValue(getAddress(p.expectTo), 32).toLowerCase() && BigInt(l.data) === amount);
        if (!moved) failures.push(`${p.kind} ${p.id}: the API says succeeded (txHash ${p.final.txHash}), the final chain has no Transfer of ${p.amount} to ${p.expectTo} in it`);
        if (used !== 1) failures.push(`${p.kind} ${p.id} succeeded, authorization used ${used} times`);
      }
      if (status === 'failed' && used !== 0) failures.push(`${p.kind} ${p.id} failed, authorization used ${used} times`);
      if (['succeeded', 'submitted', 'pending'].includes(status)) spentBase += BigInt(p.amount.replace('.', '')) * 10_000n;
    }
    // Every reserved spend the database holds was answered to a client (none the clients were not told of).
    const told = new Set(payments.map((p) => p.id).filter(Boolean));
    const untold = db.payments.filter((r) => !told.has(r.id) && r.status !== 'failed');
    if (untold.length) failures.push(`${untold.length} agent payments live in the database that no client was answered: ${untold.map((r) => `${r.id} ${r.status}`).join(', ')}`);
    const limitBase = BigInt(DAILY_LIMIT.replace('.', '')) * 10_000n; // two decimals → six (USDC base units)
    const sentLogs = await provider.getLogs({ address: deployed.usdcAddress, fromBlock: startBlock, toBlock: head, topics: [transferTopic, zeroPadValue(getAddress(signerAddress), 32)] });
    const sentOnChain = sentLogs.filter((l) => !l.removed).reduce((a, l) => a + BigInt(l.data), 0n);
    if (spentBase > limitBase) failures.push(`agent spend told to clients ${spentBase} above the daily limit ${limitBase}`);
    if (sentOnChain > limitBase) failures.push(`agent signer sent ${sentOnChain} on chain, above the daily limit ${limitBase}`);
    if (sentOnChain !== spentBase) failures.push(`agent signer sent ${sentOnChain} on chain, the clients were told ${spentBase}`);

    // Refunds: what the payee was told, read back through the API, against the chain's Transfer and AuthorizationUsed logs.
    const refundsByStatus = {};
    for (const r of refunds) {
      if (!r.id) {
        failures.push(`refund ${r.label} (${r.source}): never created: ${r.note}`);
        continue;
      }
      const status = r.final?.status ?? `HTTP ${r.lastRead}`;
      refundsByStatus[status] = (refundsByStatus[status] ?? 0) + 1;
      if (r.lastRead === 404) failures.push(`refund ${r.id}: created, GET /refunds/{id} answers 404`);
      const used = usedCount(payeeAddress, r.nonce);
      if (r.answered === 'succeeded' && status !== 'succeeded') failures.push(`refund ${r.id}: submit answered succeeded, the API now says ${status}`);
      if (status === 'succeeded') {
        const receipt = r.final.txHash ? await provider.getTransactionReceipt(r.final.txHash) : null;
        const amount = BigInt(r.amount.replace('.', '')) * 10_000n;
        const moved = receipt?.status === 1 && receipt.logs.some((l) => l.address.toLowerCase() === deployed.usdcAddress.toLowerCase() && l.topics[0] === transferTopic
          && l.topics[1] === zeroPadValue(getAddress(payeeAddress), 32).toLowerCase() && l.topics[2] === zeroPadValue(getAddress(signerAddress), 32).toLowerCase() && BigInt(l.data) === amount);
        if (!moved) failures.push(`refund ${r.id}: the API says succeeded (txHash ${r.final.txHash}), the final chain has no Transfer of ${r.amount} from ${payeeAddress} to ${signerAddress} in it`);
        if (used !== 1) failures.push(`refund ${r.id} succeeded, its authorization used ${used} times`);
      } else if (used !== 0) failures.push(`refund ${r.id} ${status}, its authorization used ${used} times`);
    }
    if ((refundsByStatus.succeeded ?? 0) < Math.min(2, opts.refunds)) failures.push(`only ${refundsByStatus.succeeded ?? 0} refunds ended succeeded (want at least ${Math.min(2, opts.refunds)})`);
    if (!ledger?.clean) failures.push(`the payee's ledger does not reconcile with the chain (balance:reconcile): ${JSON.stringify(ledger?.mismatches ?? ledger)}`);

    // Objects a client saw succeeded/funded that a reorg later took back: judged by their final state, counted.
    const wentBack = [...checkouts, ...payments, ...refunds].filter((r) => {
      const i = r.seen.findIndex((s) => s === 'succeeded' || s === 'funded');
      return i >= 0 && r.seen.slice(i + 1).some((s) => s === 'submitted' || s === 'pending' || s === 'open');
    });

    // Answers: never a 500; every 503 carries Retry-After, counted per fault window.
    const errors5xx = answers.filter((a) => typeof a.status === 'number' && a.status >= 500 && a.status !== 503);
    if (errors5xx.length) failures.push(`${errors5xx.length} answers of 5xx other than 503: ${JSON.stringify(errors5xx.slice(0, 5))}`);
    const unavailable = answers.filter((a) => a.status === 503);
    const withoutRetryAfter = unavailable.filter((a) => !a.retryAfter);
    if (withoutRetryAfter.length) failures.push(`${withoutRetryAfter.length} 503 answers without Retry-After: ${JSON.stringify(withoutRetryAfter.slice(0, 5))}`);
    const per503 = {};
    for (const a of unavailable) {
      // The latest fault that had started by then and ended no longer than its aftermath before.
      const w = windows.filter((f) => a.atMs >= f.startMs && a.atMs <= f.endMs + FAULT_AFTERMATH_MS).sort((x, y) => y.startMs - x.startMs)[0];
      const k = w ? w.key : 'outside any fault window';
      per503[k] = (per503[k] ?? 0) + 1;
    }
    const timeouts = answers.filter((a) => a.status === 'timeout' || a.status === 'error').length;

    // Webhooks: per object, ordered by createdAt, the last event renders the object's final state; no
    // type sent twice for one state change (a funding reversed and funded again may repeat checkout.funded).
    const finalOf = new Map([...checkouts, ...refunds].filter((c) => c.final).map((c) => [c.id, c.final.status]));
    for (const p of payments.filter((x) => x.checkoutSessionId)) {
      const r = await call(apis[0], 'GET', `/api/v1/checkout-sessions/${p.checkoutSessionId}`, { key: payeeKey });
      count('read checkout', r);
      if (r.status === 200) finalOf.set(p.checkoutSessionId, r.body.status);
    }
    const eventsOf = new Map();
    for (const [id, e] of receiver.seen) eventsOf.set(e.objectId, [...(eventsOf.get(e.objectId) ?? []), { id, ...e }]);
    let eventsLeftBehind = 0;
    const doubled = [];
    for (const [objectId, events] of eventsOf) {
      events.sort((a, b) => String(a.createdAt).localeCompare(String(b.createdAt)) || a.arrival - b.arrival);
      const stateEvents = events.filter((e) => e.type !== 'checkout.paid');
      const last = stateEvents.at(-1);
      const final = finalOf.get(objectId);
      if (final && last && last.status !== final) {
        eventsLeftBehind++;
        failures.push(`object ${objectId}: its last event ${last.type} renders ${last.status}, its final state is ${final} (events: ${stateEvents.map((e) => e.type).join(' → ')})`);
      }
      // A reversal may repeat an event: a funding reversed and funded again, a refund a reorg took back to pending and that succeeded again.
      const reversals = events.filter((e) => e.type === 'checkout.funding_reversed').length + Math.max(0, events.filter((e) => e.type === 'refund.updated' && e.status === 'pending').length - 1);
      const perType = new Map();
      for (const e of events) perType.set(e.type, (perType.get(e.type) ?? 0) + 1);
      for (const [type, n] of perType) if (type !== 'checkout.funding_reversed' && n > 1 + reversals) doubled.push(`${objectId} ${type} ×${n}`);
      if (refunds.some((r) => r.id === objectId) && !perType.has('refund.created')) failures.push(`refund ${objectId}: no refund.created webhook`);
    }
    if (doubled.length) failures.push(`webhook events sent twice for one state change: ${doubled.join(', ')}`);
    const unheard = checkouts.filter((c) => c.final?.status === 'funded' && !(eventsOf.get(c.id) ?? []).some((e) => e.type === 'checkout.funded'));
    if (unheard.length) failures.push(`${unheard.length} funded checkouts without a checkout.funded webhook`);
    if (!reconcile?.clean) failures.push(`reconciliation not clean on its one read after quiescence: ${JSON.stringify(reconcile?.mismatches ?? reconcile)}`);

    // ---- each fault proves it happened ----
    const finalByNonce = new Map();
    for (const m of minedSeen) if (await onFinalChain(m.hash)) finalByNonce.set(m.nonce, m);
    if (opts.faults.includes('drop')) {
      if (!proofs.drop?.dropped.length) failures.push('drop: no pending relayer transaction was dropped');
    }
    if (opts.faults.includes('fee')) {
      const replaced = (proofs.fee?.outbid ?? []).filter((o) => minedSeen.some((m) => m.nonce === o.nonce && m.hash !== o.hash && m.maxFeePerGas > BigInt(o.maxFeePerGas)));
      proofs.fee && (proofs.fee.replacementsMined = replaced.length);
      if (!proofs.fee?.outbid.length) failures.push('fee spike: no relayer transaction was outbid');
      else if (!replaced.length) failures.push(`fee spike: ${proofs.fee.outbid.length} relayer transactions outbid, no replacement with the same nonce and a higher fee was mined`);
    }
    if (opts.faults.includes('reorg')) {
      if (!proofs.reorg?.reverted) failures.push('reorg: evm_revert did not succeed');
      else if (!proofs.reorg.removedRelayerTxs.length || !proofs.reorg.removedFundings.length) failures.push(`reorg: the revert removed ${proofs.reorg.removedRelayerTxs.length} relayer transactions and ${proofs.reorg.removedFundings.length} fundings (need at least one of each)`);
    }
    if (opts.faults.includes('drain')) {
      const w = proofs.drain;
      const refused = w ? answers.filter((a) => a.status === 503 && a.code === 'unavailable' && a.reason === 'relayer_low_balance' && a.atMs >= w.startMs && a.atMs <= w.endMs) : [];
      if (!refused.length) failures.push('drain: no relay answered 503 unavailable (relayer_low_balance) while the relayer was dry');
      // Nothing was marked failed for a request refused while dry.
      const hit = [...checkouts, ...payments, ...refunds].filter((r) => r.attempts?.some((a) => a.status === 503 && w && a.atMs >= w.startMs && a.atMs <= w.endMs));
      const failedAfter = hit.filter((r) => r.final?.status === 'failed' || r.final?.status === 'expired');
      if (failedAfter.length) failures.push(`drain: ${failedAfter.length} objects refused while the relayer was dry ended failed: ${failedAfter.map((r) => r.id).join(', ')}`);
      if (w) Object.assign(w, { refused503: refused.length, objectsRefused: hit.length });
    }
    if (opts.faults.includes('kill')) {
      const k = proofs.kill;
      if (!k || (!k.jobs.length && !k.pending.length)) failures.push('kill: the workers were killed holding no work (no active job, no unmined relayer transaction)');
      else {
        // Each unmined transaction's work (its calldata) was mined exactly once on the final chain.
        for (const t of k.pending) {
          const mined = [...finalByNonce.values()].filter((m) => m.to?.toLowerCase() === t.to?.toLowerCase() && m.data === t.data);
          if (mined.length !== 1) failures.push(`kill: the work of relayer tx ${t.hash} (nonce ${t.nonce}) was mined ${mined.length} times on the final chain`);
        }
      }
    }

    Object.assign(out, {
      seconds: Number(((Date.now() - started) / 1000).toFixed(1)),
      requests: statusCounts,
      checkouts: checkouts.length,
      relaysAnswered200: checkouts.filter((c) => c.answered200).length,
      relaysMovedOnce,
      relaysNotAnswered200: checkouts.filter((c) => !c.answered200).map((c) => ({ id: c.id, answers: c.statuses, used: usedCount(buyer.address, c.nonce) })),
      checkoutsFunded: checkouts.filter((c) => c.final?.status === 'funded').length,
      payments: byStatus,
      refunds: { total: refunds.length, created: refunds.filter((r) => r.id).length, answeredSucceeded: refunds.filter((r) => r.answered === 'succeeded').length, answered: refunds.map((r) => r.answered), final: refundsByStatus, sources: refunds.map((r) => r.source) },
      ledgerReconcile: ledger,
      agentSpent: { toldToClients: spentBase.toString(), onChain: sentOnChain.toString(), limit: limitBase.toString() },
      relayerTransactions: db.relayer.txs,
      relayerTxsMinedSeen: minedSeen.length,
      proofs,
      unavailable: { total: unavailable.length, perFaultWindow: per503, withoutRetryAfter: withoutRetryAfter.length },
      timeouts,
      wentBackAfterAnswer: wentBack.map((r) => ({ id: r.id, seen: r.seen })),
      blocks: head - startBlock,
      webhooks: { deliveries: [...receiver.seen.values()].reduce((a, e) => a + e.count, 0), webhookIds: receiver.seen.size, objectsLeftBehind: eventsLeftBehind },
      reconcileClean: Boolean(reconcile?.clean),
      reconcile,
    });
  } finally {
    await tearDown({ stops, provider, anvil, receiver, database: DB_NAME, redisPrefix });
    releaseChildren();
  }
  console.log(`\nchaos (2 apis, 2 workers, ${BLOCK_SECONDS} s blocks, CONFIRMATIONS=${CONFIRMATIONS}) in ${out.seconds} s`);
  console.log(`  requests: ${JSON.stringify(out.requests)}`);
  console.log(`  checkouts ${out.checkouts}: relay answered 200 for ${out.relaysAnswered200}, authorization used once for ${out.relaysMovedOnce}, funded ${out.checkoutsFunded}`);
  console.log(`  agent spends (final state through the API): ${JSON.stringify(out.payments)}; spent ${out.agentSpent.toldToClients} (told to clients) / ${out.agentSpent.onChain} (chain), limit ${out.agentSpent.limit} base units`);
  if (out.refunds) console.log(`  refunds ${out.refunds.total} (${out.refunds.sources.filter((x) => x === 'release').length} of released agent escrows, ${out.refunds.sources.filter((x) => x === 'payment').length} of payments): submit answered ${JSON.stringify(out.refunds.answered)}, final ${JSON.stringify(out.refunds.final)}; payee ledger reconciles both ways: ${Boolean(out.ledgerReconcile?.clean)} (${out.ledgerReconcile?.rows ?? '-'} rows, ${out.ledgerReconcile?.ledger ?? '-'} USDC)`);
  console.log(`  faults proven: drop ${out.proofs.drop?.dropped.length ?? '-'} dropped; fee ${out.proofs.fee?.outbid.length ?? '-'} outbid, ${out.proofs.fee?.replacementsMined ?? '-'} replacements mined; reorg ${out.proofs.reorg ? `${out.proofs.reorg.blocks} blocks, removed ${out.proofs.reorg.removedRelayerTxs.length} relayer txs and ${out.proofs.reorg.removedFundings.length} fundings` : '-'}; drain ${out.proofs.drain?.refused503 ?? '-'} relays refused 503; kill ${out.proofs.kill ? `${out.proofs.kill.jobs.length} active jobs, ${out.proofs.kill.pending.length} unmined txs` : '-'}`);
  console.log(`  answers: 503 ${JSON.stringify(out.unavailable)}; timeouts ${out.timeouts}; told succeeded/funded then taken back by the reorg: ${out.wentBackAfterAnswer.length}`);
  console.log(`  relayer transactions ${out.relayerTransactions} (rows), ${out.relayerTxsMinedSeen} seen mined, blocks ${out.blocks}`);
  console.log(`  webhooks: ${out.webhooks.deliveries} deliveries, ${out.webhooks.webhookIds} webhook-ids, ${out.webhooks.objectsLeftBehind} objects whose last event is not their final state; reconciliation clean on its one read: ${out.reconcileClean}; quiescence ${out.quiescenceMs ?? 'never'} ms after the load`);
  console.log(`results: ${writeResult(`chaos-${fileStamp(new Date(out.startedAt))}.json`, JSON.stringify({ ...out, failures }, null, 2))}`);
  if (failures.length) throw new Error(`chaos failed:\n  ${failures.join('\n  ')}`);
  console.log('chaos passed');
}

if (isMain(import.meta.url)) runMain(main);
