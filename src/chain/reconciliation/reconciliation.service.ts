import { Inject, Injectable, Logger } from '@nestjs/common';
import { Contract, getAddress, Interface, TypedDataEncoder } from 'ethers';
import Redis from 'ioredis';
import { TestUSDCArtifact } from '@lib/contracts';
import { type EscrowState, lastConfirmedBlock } from '@lib/chain';
import { formatAmount } from '@lib/money';
import { AppConfig } from '../../config/app-config';
import { ClusterLock } from '../../database/cluster-lock';
import { REDIS } from '../../common/redis/redis.module';
import { ChainAccess } from '../chain-access.service';
import { TransactionHost, TxHost } from '../../database/transaction';
import { ChainCursors, ESCROW_CURSOR } from '../chain-cursors.repository';
import { ReconciliationRepository } from './reconciliation.repository';
import { MismatchKind, reconcileMismatches, reconcileRuns } from './reconciliation.metrics';

/** One disagreement between the ledger and the chain; `ids` are our row ids (or the relayer address). */
export interface Mismatch {
  kind: MismatchKind;
  ids: string[];
  expected: string;
  actual: string;
}

/**
 * Something a pass noticed that is not a ledger error (issue 30): `escrow_surplus`, USDC sent to the
 * escrow contract outside any escrow (dust anyone can send). Logged and shown in `/health/ready`,
 * never counted in `reconcile_mismatches_total`.
 */
export interface Notice {
  kind: 'escrow_surplus';
  ids: string[];
  expected: string;
  actual: string;
}

/** Cursor (in chain_cursors) of the AuthorizationCanceled logs reconciliation has read. */
export const RECONCILE_CANCELS_CURSOR = 'reconcile-cancels';
/** Windows of RECONCILE_LOG_WINDOW blocks one pass reads at most; the next pass goes on. */
const MAX_LOG_WINDOWS_PER_PASS = 100;

/**
 * What one pass found (DESIGN §18). `block` is the confirmed head the pass read at and `cursorBlock` the
 * escrow indexer's cursor. The escrow checks accept the chain at either block, since the ledger may trail
 * the head by the indexer's lag or lead the cursor by the API's fast path: a disagreement is reported once
 * the indexer has read past the block that caused it (one indexer pass later). Amounts are decimal USDC text.
 */
export interface ReconcileReport {
  ranAt: string;
  block: number;
  cursorBlock: number | null;
  clean: boolean;
  counts: Partial<Record<MismatchKind, number>>;
  mismatches: Mismatch[];
  /** Not mismatches: logged and shown, never counted (issue 30). */
  notices: Notice[];
  checked: { escrows: number; payments: number; x402Settlements: number; relayers: number };
  escrowBalance: { ledger: string; chain: string };
  /** The held escrows' batch read this pass (id order): after which id it started ('' = the first) and whether the next pass starts over. */
  escrowBatch: { after: string; wrapped: boolean };
  /** The batch of escrows changed in the last 7 days read this pass ((updated_at, id) order; the cursor is '<updated_at>|<id>'), likewise. */
  recentEscrowBatch: { after: string; wrapped: boolean };
  /** The batches of ended payments and x402 settlements read this pass, likewise ('' = the first; the cursor is '<updated_at>|<id>'). */
  paymentBatch: { after: string; wrapped: boolean };
  x402Batch: { after: string; wrapped: boolean };
  /** How far the AuthorizationCanceled logs are read (a failed-but-used row above it is judged on a later pass). */
  cancelScan: { cursor: number; block: number };
}

/** Terminal rows changed within this window are re-checked; older ones were checked by earlier passes. */
const RECHECK_TERMINAL_DAYS = 7;
/** RPC reads in flight at once during a pass. */
const RPC_BATCH = 16;
const LAST_REPORT_TTL_S = 7 * 86_400;

const USDC_IFACE = new Interface(TestUSDCArtifact.abi);
const CANCELED_TOPIC = USDC_IFACE.getEvent('AuthorizationCanceled')!.topicHash;
const TRANSFER_TOPIC = USDC_IFACE.getEvent('Transfer')!.topicHash;

/**
 * Reconciliation (DESIGN §18): proves the ledger against the chain and reports, never repairs.
 * Checks (a) the escrow contract's USDC balance equals the sum of held escrows (one aggregate query; a
 * surplus is the notice `escrow_surplus`, not a mismatch: anyone can send dust to the contract); (b) each
 * escrow's status equals the contract's state for its key, a batch of RECONCILE_BATCH per pass from a
 * cursor in Redis; (c) each succeeded payment and settled x402 settlement (those that ended in the last
 * 7 days, a batch of RECONCILE_BATCH of each per pass from its own cursor) has its EIP-3009 authorization
 * used on chain, each failed one unused or cancelled (AuthorizationCanceled logs read in windows of
 * RECONCILE_LOG_WINDOW blocks from a cursor), each succeeded payment's transaction moved its amount to
 * its payee (`payment_amount`, `payment_recipient`), and nothing is pending past its validBefore plus
 * PAYMENT_SWEEP_IDLE_SECONDS (`stale_pending`; issue 30); (d) each relayer address's
 * next nonce in Postgres equals the node's pending count, a gap counting once older than the bump time;
 * and that the USDC EIP-712 domain we sign with hashes to the token's DOMAIN_SEPARATOR().
 * Database reads happen first, in no transaction; then the RPC reads (no DB transaction is held across a
 * network call). Each mismatch is logged with its ids and counted in `reconcile_mismatches_total{kind}`;
 * the report is kept in Redis for `/health/ready`.
 */
@Injectable()
export class ReconciliationService {
  private readonly logger = new Logger('Reconciliation');
  constructor(
    private readonly repo: ReconciliationRepository,
    private readonly cursors: ChainCursors,
    private readonly chain: ChainAccess,
    private readonly config: AppConfig,
    @Inject(REDIS) private readonly redis: Redis,
    private readonly txHost: TransactionHost,
    private readonly lock: ClusterLock,
  ) {}

  /** One pass under the cluster-wide lock `reconcile`; null when another process holds it. */
  async runExclusive(): Promise<ReconcileReport | null> {
    const run = await this.lock.run('reconcile', () => this.run());
    if (!run.ran) reconcileRuns.inc({ outcome: 'skipped' });
    return run.ran ? run.value : null;
  }

  /**
   * One pass (see the class doc). Logs each mismatch, counts it, stores the report.
   * @throws the RPC or database error that stopped the pass (counted as `failed`; nothing is stored).
   */
  async run(): Promise<ReconcileReport> {
    try {
      const report = await this.check();
      for (const m of report.mismatches) {
        reconcileMismatches.inc({ kind: m.kind });
        this.logger.error({ kind: m.kind, ids: m.ids, expected: m.expected, actual: m.actual }, 'reconciliation mismatch');
      }
      for (const n of report.notices) this.logger.warn({ kind: n.kind, ids: n.ids, expected: n.expected, actual: n.actual }, 'reconciliation notice');
      reconcileRuns.inc({ outcome: report.clean ? 'clean' : 'mismatch' });
      await this.redis.set(this.reportKey(), JSON.stringify(report), 'EX', LAST_REPORT_TTL_S);
      return report;
    } catch (err) {
      reconcileRuns.inc({ outcome: 'failed' });
      throw err;
    }
  }

  /** The last stored report of any process, or null before the first pass. */
  async lastReport(): Promise<ReconcileReport | null> {
    const raw = await this.redis.get(this.reportKey());
    return raw ? (JSON.parse(raw) as ReconcileReport) : null;
  }

  private reportKey(): string {
    return `${this.config.env.REDIS_PREFIX}:reconcile:last`;
  }

  private async check(): Promise<ReconcileReport> {
    const batchKey = `${this.config.env.REDIS_PREFIX}:reconcile:escrow-after`;
    const paymentKey = `${this.config.env.REDIS_PREFIX}:reconcile:payment-after`;
    const x402Key = `${this.config.env.REDIS_PREFIX}:reconcile:x402-after`;
    const recentKey = `${this.config.env.REDIS_PREFIX}:reconcile:escrow-recent-after`;
    const [after = '', paymentAfter = '', x402After = '', recentAfter = ''] = (await this.redis.mget(batchKey, paymentKey, x402Key, recentKey)).map((v) => v ?? '');
    const batchSize = this.config.env.RECONCILE_BATCH;
    const [heldEscrows, recentEscrows, payments, settlements, relayers, cursorBlock, held] = await Promise.all([
      this.repo.heldEscrows(after, batchSize),
      this.repo.recentEscrows(RECHECK_TERMINAL_DAYS, recentAfter || null, batchSize),
      this.repo.terminalPayments(RECHECK_TERMINAL_DAYS, paymentAfter || null, batchSize),
      this.repo.terminalSettlements(RECHECK_TERMINAL_DAYS, x402After || null, batchSize),
      this.repo.relayerNonces(),
      this.cursors.read(ESCROW_CURSOR),
      this.repo.heldSum(),
    ]);
    const ledgerBalance = held.sum;
    // A held escrow changed recently is in both batches: checked once.
    const escrows = [...new Map([...heldEscrows, ...recentEscrows].map((e) => [e.id, e])).values()];

    const gateway = this.chain.gateway;
    const head = await this.chain.clock.headBlock();
    const block = Math.max(0, lastConfirmedBlock(head, this.config.env.CONFIRMATIONS));
    const cursor = cursorBlock !== null ? Math.min(cursorBlock, block) : null;
    const blocks = cursor !== null && cursor !== block && cursor >= this.config.env.ESCROW_DEPLOY_BLOCK ? [cursor, block] : [block];
    const mismatches: Mismatch[] = [];
    const notices: Notice[] = [];

    // (a) The contract holds the held escrows: less is a mismatch; more (USDC sent to it outside any escrow) a notice.
    const chainBalances = await Promise.all(blocks.map((b) => this.chain.usdc.balanceOf(gateway.escrowAddress, b)));
    if (!chainBalances.includes(ledgerBalance)) {
      const finding = {
        ids: [gateway.escrowAddress],
        expected: `${formatAmount(ledgerBalance)} held by ${held.count} escrows`,
        actual: `${formatAmount(chainBalances[chainBalances.length - 1])} on chain`,
      };
      if (chainBalances.every((b) => b > ledgerBalance)) notices.push({ kind: 'escrow_surplus', ...finding });
      else mismatches.push({ kind: 'escrow_balance', ...finding });
    }

    // (b) Each escrow's status is the contract's state (this pass's batch; the next pass goes on after it).
    await inBatches(escrows, async (e) => {
      const states = await Promise.all(blocks.map((b) => gateway.getOnChainEscrow(e.escrow_key, b).then((s) => s.state)));
      if (!states.includes(e.status as EscrowState)) {
        mismatches.push({ kind: 'escrow_state', ids: [e.id], expected: e.status, actual: states[states.length - 1] });
      }
    });
    // Every batch: this pass's; the next pass goes on after it, and a batch shorter than the size wraps to the start (issue 33).
    const endedSettlements = settlements.filter((s) => s.cursor !== null);
    const paymentsWrapped = payments.length < batchSize;
    const x402Wrapped = endedSettlements.length < batchSize;
    await this.redis
      .multi()
      .set(batchKey, heldEscrows.length < batchSize ? '' : heldEscrows[heldEscrows.length - 1].id, 'EX', LAST_REPORT_TTL_S)
      .set(recentKey, recentEscrows.length < batchSize ? '' : recentEscrows[recentEscrows.length - 1].cursor, 'EX', LAST_REPORT_TTL_S)
      .set(paymentKey, paymentsWrapped ? '' : payments[payments.length - 1].cursor, 'EX', LAST_REPORT_TTL_S)
      .set(x402Key, x402Wrapped ? '' : endedSettlements[endedSettlements.length - 1].cursor!, 'EX', LAST_REPORT_TTL_S)
      .exec();

    // (c) Authorizations: used ⇔ succeeded; failed ⇒ unused or cancelled (cancellations read in windows from a cursor).
    const scanned = await this.scanCancellations(block);
    const usedButFailed: Array<{ kind: MismatchKind; id: string; key: string }> = [];
    const authorizationMismatch = async (kind: MismatchKind, id: string, ok: boolean, authorizer: string, nonce: string) => {
      const used = await this.chain.usdc.authorizationState(authorizer, nonce, block);
      if (ok && !used) mismatches.push({ kind, ids: [id], expected: 'authorization used on chain', actual: 'unused' });
      if (!ok && used) usedButFailed.push({ kind, id, key: `${authorizer}:${nonce}`.toLowerCase() });
    };
    await inBatches(payments, (p) => authorizationMismatch('payment_authorization', p.id, p.status === 'succeeded', p.from_address, p.auth_nonce));
    await inBatches(settlements, (s) => authorizationMismatch('x402_authorization', s.id, s.status !== 'failed', s.payer, s.nonce));
    if (scanned >= block) {
      const cancelled = await this.repo.cancelled(usedButFailed.map((u) => u.key), block);
      for (const u of usedButFailed) {
        if (!cancelled.has(u.key)) mismatches.push({ kind: u.kind, ids: [u.id], expected: 'authorization unused or cancelled', actual: 'used on chain' });
      }
    }

    // (c′) Each succeeded payment moved its amount to its payee: the Transfer log of its transaction.
    await inBatches(
      payments.filter((p) => p.status === 'succeeded' && p.tx_hash),
      async (p) => {
        const m = await this.transferMismatch(p);
        if (m) mismatches.push(m);
      },
    );

    // (c″) Nothing stays pending or submitted past its authorization's validBefore (plus the sweep's idle time).
    const chainNow = (await this.chain.provider.getBlock(block))?.timestamp ?? Math.floor(Date.now() / 1000);
    for (const r of await this.repo.stalePending(chainNow - this.config.env.PAYMENT_SWEEP_IDLE_SECONDS)) {
      mismatches.push({ kind: 'stale_pending', ids: [r.id], expected: `${r.source} decided by validBefore ${r.valid_before}`, actual: `${r.status} at chain time ${chainNow}` });
    }

    // (d) Relayer nonces.
    await inBatches(relayers, async (r) => {
      const mismatch = await this.relayerNonce(r.address, Number(r.next_nonce));
      if (mismatch) mismatches.push(mismatch);
    });

    // The domain we sign EIP-3009 authorizations with is the token's.
    const domainMismatch = await this.usdcDomain();
    if (domainMismatch) mismatches.push(domainMismatch);

    const counts: ReconcileReport['counts'] = {};
    for (const m of mismatches) counts[m.kind] = (counts[m.kind] ?? 0) + 1;
    return {
      ranAt: new Date().toISOString(),
      block,
      cursorBlock: cursor,
      clean: mismatches.length === 0,
      counts,
      mismatches,
      notices,
      checked: { escrows: escrows.length, payments: payments.length, x402Settlements: settlements.length, relayers: relayers.length },
      escrowBalance: { ledger: formatAmount(ledgerBalance), chain: formatAmount(chainBalances[chainBalances.length - 1]) },
      escrowBatch: { after, wrapped: heldEscrows.length < batchSize },
      recentEscrowBatch: { after: recentAfter, wrapped: recentEscrows.length < batchSize },
      paymentBatch: { after: paymentAfter, wrapped: paymentsWrapped },
      x402Batch: { after: x402After, wrapped: x402Wrapped },
      cancelScan: { cursor: scanned, block },
    };
  }

  /**
   * Reads USDC AuthorizationCanceled logs from the cursor `reconcile-cancels` towards `block`, at most
   * RECONCILE_LOG_WINDOW blocks per eth_getLogs (public nodes refuse long ranges; issue 30) and
   * {@link MAX_LOG_WINDOWS_PER_PASS} windows per pass; each window's logs commit with the cursor.
   * @returns the block read up to (below `block` when the next pass must go on).
   */
  private async scanCancellations(block: number): Promise<number> {
    const window = this.config.env.RECONCILE_LOG_WINDOW;
    let cursor = (await this.cursors.read(RECONCILE_CANCELS_CURSOR)) ?? this.config.env.ESCROW_DEPLOY_BLOCK - 1;
    for (let w = 0; w < MAX_LOG_WINDOWS_PER_PASS && cursor < block; w++) {
      const from = cursor + 1;
      const to = Math.min(block, cursor + window);
      const logs = await this.chain.provider.getLogs({ address: this.chain.usdc.address, fromBlock: from, toBlock: to, topics: [CANCELED_TOPIC] });
      const rows = logs
        .filter((l) => !l.removed)
        .map((l) => ({ authorizer: getAddress('0x' + l.topics[1].slice(26)), nonce: l.topics[2], blockNumber: l.blockNumber, txHash: l.transactionHash }));
      await (this.txHost as TxHost).withTransaction(async () => {
        await this.repo.recordCancellations(rows);
        await this.cursors.set(RECONCILE_CANCELS_CURSOR, to);
      });
      cursor = to;
    }
    return cursor;
  }

  /**
   * A succeeded payment's transaction must carry a USDC Transfer from its signer of its amount to its
   * payee (the escrow contract for an agent escrow). @returns payment_recipient when no transfer from the
   * signer goes to the payee, payment_amount when one does with another value, else null.
   */
  private async transferMismatch(p: { id: string; from_address: string; to_address: string; amount: string; tx_hash: string | null; mode: string }): Promise<Mismatch | null> {
    const receipt = await this.chain.provider.getTransactionReceipt(p.tx_hash!);
    if (!receipt) return null; // no block holds it: payment_authorization says so, or the reorg unwind takes it back
    const gateway = this.chain.gateway;
    const payee = (p.mode === 'escrow' ? gateway.escrowAddress : p.to_address).toLowerCase();
    const from = p.from_address.toLowerCase();
    const transfers = receipt.logs
      .filter((l) => l.address.toLowerCase() === this.chain.usdc.address.toLowerCase() && l.topics[0] === TRANSFER_TOPIC)
      .map((l) => ({ from: ('0x' + l.topics[1].slice(26)).toLowerCase(), to: ('0x' + l.topics[2].slice(26)).toLowerCase(), value: BigInt(l.data) }))
      .filter((t) => t.from === from);
    const amount = BigInt(p.amount);
    if (transfers.some((t) => t.to === payee && t.value === amount)) return null;
    const toPayee = transfers.find((t) => t.to === payee);
    if (toPayee) return { kind: 'payment_amount', ids: [p.id], expected: `${formatAmount(amount)} to ${payee}`, actual: `${formatAmount(toPayee.value)} in ${p.tx_hash}` };
    const other = transfers[0];
    return { kind: 'payment_recipient', ids: [p.id], expected: `${formatAmount(amount)} to ${payee}`, actual: other ? `${formatAmount(other.value)} to ${other.to} in ${p.tx_hash}` : `no transfer from ${from} in ${p.tx_hash}` };
  }

  /**
   * The node's pending count must equal our next nonce. A gap (we allocated nonces the node does not know)
   * counts once its first missing nonce's row is older than the bump time: younger, it may be signing or
   * in flight. The node knowing more nonces than we allocated means another sender uses the key: at once.
   */
  private async relayerNonce(address: string, next: number): Promise<Mismatch | null> {
    const pending = await this.chain.provider.getTransactionCount(address, 'pending');
    if (pending === next) return null;
    const mismatch: Mismatch = { kind: 'relayer_nonce', ids: [address], expected: `next nonce ${next}`, actual: `node pending count ${pending}` };
    if (pending > next) return mismatch;
    const bumpAfterS = this.config.env.RELAYER_BUMP_AFTER_S;
    const row = await this.repo.relayerTransactionAt(address, pending);
    if (row && row.age_s < bumpAfterS) return null;
    if (row) mismatch.ids.push(row.id);
    return mismatch;
  }

  /** The configured (or token-read) EIP-712 domain must hash to the token's DOMAIN_SEPARATOR(); skipped when the token has none. */
  private async usdcDomain(): Promise<Mismatch | null> {
    const token = new Contract(this.chain.usdc.address, USDC_IFACE, this.chain.provider);
    const reported = (await token.getFunction('DOMAIN_SEPARATOR').staticCall().catch(() => null)) as string | null;
    if (reported === null) return null;
    const ours = await this.chain.usdc.eip712Domain();
    const hash = TypedDataEncoder.hashDomain(ours);
    if (hash === reported) return null;
    return { kind: 'usdc_domain', ids: [this.chain.usdc.address], expected: `DOMAIN_SEPARATOR ${reported}`, actual: `ours ${hash} (${ours.name}, ${ours.version})` };
  }
}

/** Runs `fn` over `items`, {@link RPC_BATCH} at a time. */
async function inBatches<T>(items: readonly T[], fn: (item: T) => Promise<void>): Promise<void> {
  for (let i = 0; i < items.length; i += RPC_BATCH) await Promise.all(items.slice(i, i + RPC_BATCH).map(fn));
}
