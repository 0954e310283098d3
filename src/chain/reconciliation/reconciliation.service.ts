import { Inject, Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import { Contract, getAddress, Interface, TypedDataEncoder, zeroPadValue } from 'ethers';
import Redis from 'ioredis';
import { TestUSDCArtifact } from '@lib/contracts';
import { type EscrowState, lastConfirmedBlock } from '@lib/chain';
import { formatAmount } from '@lib/money';
import { AppConfig } from '../../config/app-config';
import { ClusterLock } from '../../database/cluster-lock';
import { REDIS } from '../../common/redis/redis.module';
import { ChainAccess } from '../chain-access.service';
import { ChainCursors, ESCROW_CURSOR } from '../chain-cursors.repository';
import { HELD, ReconciliationRepository } from './reconciliation.repository';
import { MismatchKind, reconcileMismatches, reconcileRuns } from './reconciliation.metrics';

/** One disagreement between the ledger and the chain; `ids` are our row ids (or the relayer address). */
export interface Mismatch {
  kind: MismatchKind;
  ids: string[];
  expected: string;
  actual: string;
}

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
  checked: { escrows: number; payments: number; x402Settlements: number; relayers: number };
  escrowBalance: { ledger: string; chain: string };
}

/** Terminal rows changed within this window are re-checked; older ones were checked by earlier passes. */
const RECHECK_TERMINAL_DAYS = 7;
/** RPC reads in flight at once during a pass. */
const RPC_BATCH = 16;
const LAST_REPORT_TTL_S = 7 * 86_400;

const USDC_IFACE = new Interface(TestUSDCArtifact.abi);
const CANCELED_TOPIC = USDC_IFACE.getEvent('AuthorizationCanceled')!.topicHash;

/**
 * Reconciliation (DESIGN §18): proves the ledger against the chain and reports, never repairs.
 * Checks (a) the escrow contract's USDC balance equals the sum of held escrows; (b) each escrow's status
 * equals the contract's state for its key; (c) each succeeded payment and settled x402 settlement has its
 * EIP-3009 authorization used on chain, each failed one unused or cancelled; (d) each relayer address's
 * next nonce in Postgres equals the node's pending count, a gap counting once older than the bump time;
 * and that the USDC EIP-712 domain we sign with hashes to the token's DOMAIN_SEPARATOR().
 * Database reads happen first, in no transaction; then the RPC reads (no DB transaction is held across a
 * network call). Each mismatch is logged with its ids and counted in `reconcile_mismatches_total{kind}`;
 * the report is kept in Redis for `/health/ready`.
 */
@Injectable()
export class ReconciliationService implements OnModuleDestroy {
  private readonly logger = new Logger('Reconciliation');
  private readonly lock: ClusterLock;

  constructor(
    private readonly repo: ReconciliationRepository,
    private readonly cursors: ChainCursors,
    private readonly chain: ChainAccess,
    private readonly config: AppConfig,
    @Inject(REDIS) private readonly redis: Redis,
  ) {
    this.lock = new ClusterLock(config.env.DATABASE_URL);
  }

  async onModuleDestroy(): Promise<void> {
    await this.lock.close();
  }

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
    const [escrows, payments, settlements, relayers, cursorBlock, ledgerBalance] = await Promise.all([
      this.repo.escrows(RECHECK_TERMINAL_DAYS),
      this.repo.terminalPayments(RECHECK_TERMINAL_DAYS),
      this.repo.terminalSettlements(RECHECK_TERMINAL_DAYS),
      this.repo.relayerNonces(),
      this.cursors.read(ESCROW_CURSOR),
      this.repo.heldSum(),
    ]);

    const gateway = this.chain.gateway;
    const head = await gateway.headBlock();
    const block = Math.max(0, lastConfirmedBlock(head, this.config.env.CONFIRMATIONS));
    const cursor = cursorBlock !== null ? Math.min(cursorBlock, block) : null;
    const blocks = cursor !== null && cursor !== block && cursor >= this.config.env.ESCROW_DEPLOY_BLOCK ? [cursor, block] : [block];
    const mismatches: Mismatch[] = [];

    // (a) The contract holds exactly the held escrows.
    const chainBalances = await Promise.all(blocks.map((b) => gateway.usdcBalance(gateway.escrowAddress, b)));
    if (!chainBalances.includes(ledgerBalance)) {
      mismatches.push({
        kind: 'escrow_balance',
        ids: [gateway.escrowAddress],
        expected: `${formatAmount(ledgerBalance)} held by ${escrows.filter((e) => (HELD as readonly string[]).includes(e.status)).length} escrows`,
        actual: `${formatAmount(chainBalances[chainBalances.length - 1])} on chain`,
      });
    }

    // (b) Each escrow's status is the contract's state.
    await inBatches(escrows, async (e) => {
      const states = await Promise.all(blocks.map((b) => gateway.getOnChainEscrow(e.escrow_key, b).then((s) => s.state)));
      if (!states.includes(e.status as EscrowState)) {
        mismatches.push({ kind: 'escrow_state', ids: [e.id], expected: e.status, actual: states[states.length - 1] });
      }
    });

    // (c) Authorizations: used ⇔ succeeded; failed ⇒ unused or cancelled.
    const authorizationMismatch = async (kind: MismatchKind, id: string, ok: boolean, authorizer: string, nonce: string) => {
      const used = await gateway.authorizationState(authorizer, nonce, block);
      if (ok && !used) mismatches.push({ kind, ids: [id], expected: 'authorization used on chain', actual: 'unused' });
      if (!ok && used && !(await this.cancelled(authorizer, nonce, block))) {
        mismatches.push({ kind, ids: [id], expected: 'authorization unused or cancelled', actual: 'used on chain' });
      }
    };
    await inBatches(payments, (p) => authorizationMismatch('payment_authorization', p.id, p.status === 'succeeded', p.from_address, p.auth_nonce));
    await inBatches(settlements, (s) => authorizationMismatch('x402_authorization', s.id, s.status !== 'failed', s.payer, s.nonce));

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
      checked: { escrows: escrows.length, payments: payments.length, x402Settlements: settlements.length, relayers: relayers.length },
      escrowBalance: { ledger: formatAmount(ledgerBalance), chain: formatAmount(chainBalances[chainBalances.length - 1]) },
    };
  }

  /** Whether `authorizer` cancelled `nonce` (an AuthorizationCanceled log) up to `block`. */
  private async cancelled(authorizer: string, nonce: string, block: number): Promise<boolean> {
    const logs = await this.chain.provider.getLogs({
      address: this.chain.gateway.usdcAddress,
      fromBlock: this.config.env.ESCROW_DEPLOY_BLOCK,
      toBlock: block,
      topics: [CANCELED_TOPIC, zeroPadValue(getAddress(authorizer), 32), nonce],
    });
    return logs.some((l) => !l.removed);
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
    const gateway = this.chain.gateway;
    const token = new Contract(gateway.usdcAddress, USDC_IFACE, this.chain.provider);
    const reported = (await token.getFunction('DOMAIN_SEPARATOR').staticCall().catch(() => null)) as string | null;
    if (reported === null) return null;
    const ours = await gateway.usdcEip712Domain();
    const hash = TypedDataEncoder.hashDomain(ours);
    if (hash === reported) return null;
    return { kind: 'usdc_domain', ids: [gateway.usdcAddress], expected: `DOMAIN_SEPARATOR ${reported}`, actual: `ours ${hash} (${ours.name}, ${ours.version})` };
  }
}

/** Runs `fn` over `items`, {@link RPC_BATCH} at a time. */
async function inBatches<T>(items: readonly T[], fn: (item: T) => Promise<void>): Promise<void> {
  for (let i = 0; i < items.length; i += RPC_BATCH) await Promise.all(items.slice(i, i + RPC_BATCH).map(fn));
}
