import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Contract, Interface, JsonRpcProvider, type TransactionReceipt, Wallet, toBeHex } from 'ethers';
import { TestUSDCArtifact, CheckoutEscrowArtifact } from '@lib/contracts';
import { type ChainClock, connectChain, createProvider, type EscrowGateway, type EscrowPartyAction, type FundingTerms, type UsdcGateway } from '@lib/chain';
import { EscrowTestSenders } from '../../libs/chain/src/testing';
import { EscrowService } from '../../src/modules/escrow/escrow.service';
import { EscrowIndexer, type PollResult } from '../../src/modules/escrow/escrow-indexer.service';
import type { CheckoutFundingDto } from '../../src/modules/escrow/dto/escrow.dto';
import type { TestApp } from './app';
import { createOrg, type TestOrg } from './factories';

/** 1 USDC in base units. */
export const USDC = 10n ** 6n;

const ESCROW_IFACE = new Interface(CheckoutEscrowArtifact.abi);
const USDC_IFACE = new Interface(TestUSDCArtifact.abi);

/** Longest a test waits for one of its own transactions to be mined (on automine, well under a second). */
export const TX_WAIT_MS = 60_000;

/**
 * The run's shared anvil (started by test global setup) seen from a test file: its own provider
 * (50 ms polling) and gateways (escrow, USDC, clock, test senders) on RPC_URL / ESCROW_ADDRESS / USDC_ADDRESS, the service's relayer,
 * arbiter and terms-signer wallets, fresh funded wallets (random keys, so no two files share an
 * address) and the anvil RPCs tests need. Files run in band on one chain: never evm_revert past
 * what the test itself created.
 */
export class TestChain {
  readonly provider: JsonRpcProvider;
  readonly gateway: EscrowGateway;
  readonly usdc: UsdcGateway;
  readonly clock: ChainClock;
  /** Test-only escrow senders (funding from a wallet, relayed actions). */
  readonly senders: EscrowTestSenders;
  readonly relayer: Wallet;
  readonly arbiter: Wallet;
  readonly termsSigner: Wallet;
  private readonly minter: Wallet;
  private minterFunded = false;

  constructor(env: NodeJS.ProcessEnv = process.env) {
    const need = (k: string) => {
      const v = env[k];
      if (!v) throw new Error(`${k} is not set: run through jest's global setup (it starts anvil)`);
      return v;
    };
    this.provider = createProvider(need('RPC_URL'), Number(need('CHAIN_ID')), { pollingIntervalMs: 50 });
    const chain = connectChain(this.provider, { escrowAddress: need('ESCROW_ADDRESS'), usdcAddress: need('USDC_ADDRESS') });
    this.gateway = chain.escrow;
    this.usdc = chain.usdc;
    this.clock = chain.clock;
    this.senders = new EscrowTestSenders(chain.escrow);
    this.relayer = new Wallet(need('RELAYER_PRIVATE_KEY'), this.provider);
    this.arbiter = new Wallet(need('ARBITER_PRIVATE_KEY'), this.provider);
    this.termsSigner = new Wallet(need('TERMS_SIGNER_PRIVATE_KEY'), this.provider);
    this.minter = Wallet.createRandom().connect(this.provider) as unknown as Wallet;
  }

  close(): void {
    this.provider.destroy();
  }

  /**
   * The receipt of `tx` (a sent transaction or its promise) once mined, polled by the provider's own
   * receipt poll (libs/chain createProvider) and bounded: after {@link TX_WAIT_MS} it throws, naming
   * `label` and the hash, instead of waiting as long as the test's timeout (a file runs alone on the
   * chain, so a transaction not mined by then never will be). Tests use this, not ethers' `tx.wait()`,
   * which has no bound and waits on block events. A mined revert throws, as `tx.wait()` does, unless
   * `opts.reverted` is `'allow'` (then its receipt, status 0, is returned).
   * @throws Error when no receipt came within the bound, or the transaction reverted.
   */
  async mined(tx: { hash: string } | Promise<{ hash: string }>, label: string, opts: { reverted?: 'allow' } = {}): Promise<TransactionReceipt> {
    const { hash } = await tx;
    const receipt = await this.provider.waitForTransaction(hash, 1, TX_WAIT_MS).catch((err: unknown) => {
      throw new Error(`${label}: transaction ${hash} not mined within ${TX_WAIT_MS} ms (automine off, or an underpriced or nonce-gapped transaction?)`, { cause: err });
    });
    if (!receipt) throw new Error(`${label}: no receipt for ${hash}`);
    if (receipt.status !== 1 && opts.reverted !== 'allow') throw new Error(`${label}: transaction ${hash} was mined and reverted`);
    return receipt;
  }

  rpc<T = unknown>(method: string, params: unknown[] = []): Promise<T> {
    return this.provider.send(method, params) as Promise<T>;
  }

  /** Sets an address's ETH balance (gas money) without a transaction. */
  async setEth(address: string, wei = 10n ** 20n): Promise<void> {
    await this.rpc('anvil_setBalance', [address, toBeHex(wei)]);
  }

  /** Mints TestUSDC (its open mint) to `to`, sent from this file's own minter wallet. */
  async mintUsdc(to: string, amount: bigint): Promise<void> {
    if (!this.minterFunded) {
      await this.setEth(this.minter.address);
      this.minterFunded = true;
    }
    const usdc = new Contract(this.usdc.address, TestUSDCArtifact.abi, this.minter);
    await this.mined(usdc.getFunction('mint')(to, amount), 'mint TestUSDC');
  }

  /** A fresh random wallet on this provider with `usdc` base units and, unless `eth: false`, gas money. */
  async wallet(opts: { usdc?: bigint; eth?: boolean } = {}): Promise<Wallet> {
    const w = Wallet.createRandom().connect(this.provider) as unknown as Wallet;
    if (opts.eth !== false) await this.setEth(w.address);
    if (opts.usdc) await this.mintUsdc(w.address, opts.usdc);
    return w;
  }

  usdcBalance(address: string): Promise<bigint> {
    return this.usdc.balanceOf(address);
  }

  balances(...addresses: string[]): Promise<bigint[]> {
    return Promise.all(addresses.map((a) => this.usdc.balanceOf(a)));
  }

  snapshot(): Promise<string> {
    return this.rpc<string>('evm_snapshot');
  }

  async revert(id: string): Promise<void> {
    if (!(await this.rpc<boolean>('evm_revert', [id]))) throw new Error(`evm_revert ${id} failed`);
  }

  async mine(blocks = 1): Promise<void> {
    await this.rpc('anvil_mine', [toBeHex(blocks)]);
  }

  /** Moves chain time forward by `seconds` and mines a block at the new time. */
  async increaseTime(seconds: number): Promise<void> {
    await this.rpc('evm_increaseTime', [seconds]);
    await this.rpc('evm_mine');
  }

  headBlock(): Promise<number> {
    return this.provider.getBlockNumber();
  }

  headTimestamp(): Promise<number> {
    return this.clock.headTimestamp();
  }

  /** A party's escrow call through the gateway (estimates gas first, so a would-be revert throws ChainTxError). */
  act(wallet: Wallet, action: EscrowPartyAction, escrowKey: string): Promise<string> {
    return this.gateway.act(wallet, action, escrowKey);
  }

  /**
   * Sends an escrow call with a fixed gas limit, skipping estimation, so a call the contract refuses
   * is mined and reverts (receipt status 0). Returns the transaction hash.
   */
  async sendUnchecked(wallet: Wallet, action: EscrowPartyAction, escrowKey: string): Promise<string> {
    const tx = await wallet.sendTransaction({
      to: this.gateway.escrowAddress,
      data: ESCROW_IFACE.encodeFunctionData(action, [escrowKey]),
      gasLimit: 200_000n,
    });
    await this.mined(tx, `unchecked ${action}`, { reverted: 'allow' });
    return tx.hash;
  }

  /** A plain USDC transfer (a transaction to another contract than the escrow). */
  async usdcTransfer(from: Wallet, to: string, amount: bigint): Promise<string> {
    const tx = await from.sendTransaction({ to: this.usdc.address, data: USDC_IFACE.encodeFunctionData('transfer', [to, amount]) });
    await this.mined(tx, 'USDC transfer');
    return tx.hash;
  }

  /** Gasless funding as the pay page does it: `buyer` signs EIP-3009, the service's relayer submits. */
  fundWithAuthorization(buyer: Wallet, terms: FundingTerms, termsSignature: string): Promise<string> {
    return this.senders.fundWithAuthorization(this.relayer, buyer, terms, termsSignature);
  }
}

/** An organisation bound to a fresh wallet (its payout address), so it is the buyer or seller of escrows with that address. */
/**
 * Runs this process's `Date.now()` at the chain's time until the returned restore is called. Other
 * suites move anvil's clock ahead (inspection windows, expiries); x402 clients and the `@x402/evm`
 * verifier take "now" from `Date.now()`, the chain from its blocks: this keeps them one clock, as
 * they are on a real network. Nothing changes when the chain is not ahead.
 */
export async function runAtChainTime(chain: TestChain): Promise<() => void> {
  const skewMs = (await chain.headTimestamp()) * 1000 - Date.now();
  if (skewMs <= 0) return () => {};
  const realNow = Date.now;
  Date.now = () => realNow.call(Date) + skewMs;
  return () => {
    Date.now = realNow;
  };
}

export interface Party {
  org: TestOrg;
  wallet: Wallet;
}

/** A seller party (gas money only) and a buyer party (gas money and `usdc`), each its own organisation. */
export async function createParties(t: TestApp, chain: TestChain, usdc = 1_000n * USDC): Promise<{ seller: Party; buyer: Party }> {
  const sellerWallet = await chain.wallet();
  const buyerWallet = await chain.wallet({ usdc });
  return {
    seller: { wallet: sellerWallet, org: await createOrg(t.app, { payoutAddress: sellerWallet.address }) },
    buyer: { wallet: buyerWallet, org: await createOrg(t.app, { payoutAddress: buyerWallet.address }) },
  };
}

/** POST /api/v1/checkout-sessions as `org`; fails the test unless 200. */
export async function createCheckout(t: TestApp, org: TestOrg, body: Record<string, unknown> = {}): Promise<{ id: string; amount: string } & Record<string, unknown>> {
  const res = await t.http
    .post('/api/v1/checkout-sessions')
    .set('X-Api-Key', org.key)
    .send({ amount: '25.50', description: 'Escrow test order', ...body });
  if (res.status !== 200) throw new Error(`checkout create: ${res.status} ${res.text}`);
  return res.body;
}

/**
 * The public funding terms of a checkout signed for `buyer` (contract v2 terms bind the buyer), and the
 * same terms as the chain library takes them; `termsSignature` is always set.
 */
export async function fundingTerms(t: TestApp, checkoutId: string, buyer: string): Promise<{ funding: CheckoutFundingDto & { termsSignature: string }; terms: FundingTerms }> {
  const res = await t.http.get(`/api/v1/checkout-sessions/${checkoutId}/funding-terms`).query({ buyer });
  if (res.status !== 200) throw new Error(`funding-terms: ${res.status} ${res.text}`);
  const funding = res.body as CheckoutFundingDto & { termsSignature: string };
  return { funding, terms: EscrowService.toChainTerms(funding) };
}

/** Funds a checkout on-chain only (relayer + the buyer's EIP-3009 signature); no escrow API call. */
export async function fundOnChain(t: TestApp, chain: TestChain, checkoutId: string, buyer: Wallet): Promise<string> {
  const { funding, terms } = await fundingTerms(t, checkoutId, buyer.address);
  return chain.fundWithAuthorization(buyer, terms, funding.termsSignature);
}

/**
 * Runs the indexer's job body until `done()` holds (the cursor is shared by the run and may start
 * far behind head: each pass reads at most 2000 blocks). Returns the passes' results.
 */
export async function pollUntil(t: TestApp, done: () => Promise<boolean>, label = 'indexer state', maxPasses = 50): Promise<PollResult[]> {
  const indexer = t.app.get(EscrowIndexer);
  const results: PollResult[] = [];
  for (let i = 0; i < maxPasses; i++) {
    results.push(await indexer.pollOnce());
    if (await done()) return results;
  }
  throw new Error(`${label} not reached after ${maxPasses} indexer passes: ${JSON.stringify(results.slice(-3))}`);
}

/** Runs pollOnce until the indexer has read up to the chain head. Returns the last pass. */
export async function pollToHead(t: TestApp, chain: TestChain): Promise<PollResult> {
  const indexer = t.app.get(EscrowIndexer);
  for (let i = 0; i < 50; i++) {
    const r = await indexer.pollOnce();
    if (r.toBlock >= (await chain.headBlock())) return r;
  }
  throw new Error('indexer did not reach the chain head after 50 passes');
}

/** GET a checkout session as its organisation. */
export async function getCheckout(t: TestApp, org: TestOrg, id: string): Promise<Record<string, unknown>> {
  const res = await t.http.get(`/api/v1/checkout-sessions/${id}`).set('X-Api-Key', org.key);
  if (res.status !== 200) throw new Error(`checkout get: ${res.status} ${res.text}`);
  return res.body;
}

/** Polls the indexer until the checkout shows `status`; returns the checkout. */
export async function indexUntilStatus(t: TestApp, org: TestOrg, checkoutId: string, status: string): Promise<Record<string, unknown>> {
  let last: Record<string, unknown> = {};
  await pollUntil(t, async () => (last = await getCheckout(t, org, checkoutId)).status === status, `checkout ${checkoutId} ${status}`);
  return last;
}

/** Outbox events of one checkout in the order they were written: `{id, type, status, object}`. */
export async function checkoutEvents(t: TestApp, checkoutId: string): Promise<Array<{ id: string; type: string; status: string; object: Record<string, unknown> }>> {
  const rows: Array<{ id: string; type: string; data: { object: Record<string, unknown> } }> = await t.dataSource.query(
    `SELECT id, type, data FROM outbox_events WHERE data->'object'->>'id' = $1 ORDER BY created_at, id`,
    [checkoutId],
  );
  return rows.map((r) => ({ id: r.id, type: r.type, status: r.data.object.status as string, object: r.data.object }));
}

/** Applied chain events (escrow_chain_events) of one escrow, oldest first. */
export async function chainEventRows(t: TestApp, escrowId: string): Promise<Array<{ action: string; tx_hash: string; log_index: number }>> {
  return t.dataSource.query('SELECT action, tx_hash, log_index FROM escrow_chain_events WHERE escrow_id = $1 ORDER BY block_number, log_index', [escrowId]);
}

const ROOT = join(__dirname, '..', '..');
/** The compiled operator CLI (`nest build` output; `npm test` builds before jest). */
export const CLI = join(ROOT, 'dist', 'src', 'cli.js');

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/** Throws a clear error when the compiled CLI is missing. */
export function requireBuiltCli(): void {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: build first with \`node_modules/.bin/nest build\` (npm test does)`);
}

/** Runs the compiled CLI with this process's environment (the run's database and anvil) plus `env`. */
export function runCli(args: string[], env: Record<string, string> = {}): Promise<CliRun> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { cwd: ROOT, env: { ...process.env, ...env }, encoding: 'utf8', timeout: 60_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** The one JSON object a `--json` CLI run prints; throws with the output otherwise. */
export function cliJson(run: CliRun): Record<string, unknown> {
  const lines = run.stdout.split('\n').filter((l) => l.length > 0);
  if (lines.length !== 1) throw new Error(`expected one JSON line, got ${lines.length}:\nstdout: ${run.stdout}\nstderr: ${run.stderr}`);
  return JSON.parse(lines[0]) as Record<string, unknown>;
}
