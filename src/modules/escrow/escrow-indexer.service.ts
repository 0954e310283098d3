import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { ChainTxError, EscrowChainEvent } from '@lib/chain';
import { QueryFailedError } from 'typeorm';
import { continueTrace, tracing } from '../../common/tracing/trace-context';
import { AppConfig } from '../../config/app-config';
import { ClusterLock } from '../../database/cluster-lock';
import { TransactionHost, TxHost } from '../../database/transaction';
import { CheckoutService } from '../checkout/checkout.service';
import { RelayerService } from '../../chain/relayer/relayer.service';
import { EscrowChainService } from './escrow-chain.service';
import { EscrowProjector } from './escrow-projector.service';
import { chainEvents, chainJobItemFailures, chainJobRuns, indexedBlock, reorgs } from './escrow.metrics';
import { EscrowRepository } from './escrow.repository';
import { ChainCursors, ESCROW_CURSOR as CURSOR } from '../../chain/chain-cursors.repository';
import { EscrowTransitionError, lastConfirmedBlock } from './escrow.state';
import { BalanceProjector, type BalanceMovement } from '../balance/balance-projector.service';

const MAX_RANGE = 2000;
const KEEP_BLOCKS = 10_000;

/** The chain jobs; each pass runs under its own cluster-wide lock. */
export type ChainJobName = 'index' | 'auto-release' | 'expire-checkouts';

/** Outcome of one indexer pass. */
export interface PollResult {
  fromBlock: number;
  toBlock: number;
  events: number;
  applied: number;
  /** Events that could not be applied and were set aside (chain_events_set_aside) this pass. */
  setAside: number;
  /** Set when a reorg of blocks with applied events (read here or by the API fast path) was found: the block indexing resumed after. */
  reorgForkBlock?: number;
  /** true when another process held the index lock: nothing was read; `toBlock` is the stored cursor. */
  skipped?: true;
}

/**
 * The chain indexer and the escrow schedules (docs/architecture.md §7), run by the worker. Each
 * pass holds a cluster-wide lock ({@link ClusterLock}: a session advisory lock on a dedicated
 * connection, no pooled transaction held across RPC calls), so however many workers run, one pass
 * of each job runs at a time; a pass that finds the lock taken is skipped.
 * - {@link pollOnce} reads CheckoutEscrow logs from the cursor kept in Postgres up to the last
 *   confirmed block ({@link lastConfirmedBlock}, the rule the API's verification uses too) and
 *   applies each through the projector (once per tx hash + log index). A log the projector cannot apply
 *   even in chain order is set aside (chain_events_set_aside, an error log, the
 *   `chain_indexer_events_total{outcome="set_aside"}` metric) and the cursor moves on; a transient
 *   failure (database, RPC) fails the pass, which the next one retries from the same cursor.
 *   Before reading it compares the cursor block's hash with the chain; on a mismatch it finds the
 *   fork point among remembered block hashes, forgets the events above it, re-derives the affected
 *   escrows and re-indexes from there. Events the API applied from blocks above the cursor are
 *   checked by their block hash the same way.
 * - {@link autoReleaseDue} releases delivered escrows whose inspection window has passed (by chain
 *   time), sending every release through the relayer queue first and then waiting for them together;
 *   one that fails is logged, counted and skipped.
 * - {@link expireCheckouts} records expiry of open checkouts.
 * - Traced (DESIGN §20), each applied log is an `escrow apply <action>` span; when our relayer sent its
 *   transaction, the span continues the trace of the request that queued it (stored on the relayer
 *   row) and links to this pass, so that request's trace goes on to the events and their webhooks.
 */
/** How long an auto-release waits for its relayed transaction to be mined before the next pass retries. */
const AUTO_RELEASE_MINE_TIMEOUT_MS = 60_000;

@Injectable()
export class EscrowIndexer implements OnModuleInit {
  private readonly logger = new Logger(EscrowIndexer.name);
  constructor(
    private readonly repo: EscrowRepository,
    private readonly projector: EscrowProjector,
    private readonly chain: EscrowChainService,
    private readonly checkout: CheckoutService,
    private readonly config: AppConfig,
    private readonly txHost: TransactionHost,
    private readonly relayer: RelayerService,
    private readonly cursors: ChainCursors,
    private readonly balance: BalanceProjector,
    private readonly lock: ClusterLock,
  ) {}

  /** Registers the escrow releases' rule with the ledger's reconciliation (DESIGN §21). */
  onModuleInit(): void {
    this.balance.registerSource('escrow_release', (organizationId, fromBlock, toBlock) => this.releasesIn(organizationId, fromBlock, toBlock));
  }

  /**
   * The `escrow_release` movements of `organizationId` in blocks `[fromBlock, toBlock]` as this indexer
   * derives them ({@link releasesToSellers}), read from the chain in windows of MAX_RANGE blocks, no
   * further than its cursor (reconciliation; no transaction).
   */
  private async releasesIn(organizationId: string, fromBlock: number, toBlock: number): Promise<BalanceMovement[]> {
    const last = Math.min(toBlock, (await this.cursors.read(CURSOR)) ?? -1);
    const out: BalanceMovement[] = [];
    for (let start = fromBlock; start <= last; start += MAX_RANGE) {
      const events = await this.chain.gateway.getEscrowEvents(start, Math.min(last, start + MAX_RANGE - 1));
      out.push(...(await this.releasesToSellers(events)).filter((m) => m.organizationId === organizationId));
    }
    return out;
  }

  /** One indexer pass (see the class doc); skipped when another process runs one. */
  pollOnce(): Promise<PollResult> {
    return this.exclusive(
      'index',
      () => this.indexPass(),
      async () => {
        const cursor = (await this.cursors.read(CURSOR)) ?? this.config.env.ESCROW_DEPLOY_BLOCK - 1;
        return { fromBlock: cursor + 1, toBlock: cursor, events: 0, applied: 0, setAside: 0, skipped: true };
      },
    );
  }

  /** Releases due escrows with the relayer key; returns the escrow ids released (none when another process runs the pass). */
  autoReleaseDue(): Promise<string[]> {
    return this.exclusive('auto-release', () => this.autoReleasePass(), () => []);
  }

  /** Records expiry of open checkouts past expiresAt; returns how many (0 when another process runs the pass). */
  expireCheckouts(): Promise<number> {
    return this.exclusive('expire-checkouts', () => this.checkout.expireDue(new Date()), () => 0);
  }

  /** Runs a pass under its cluster-wide lock and counts it in `chain_job_runs_total` (done, skipped, failed). */
  private async exclusive<T>(job: ChainJobName, pass: () => Promise<T>, skipped: () => Promise<T> | T): Promise<T> {
    try {
      const run = await this.lock.run(`chain:${job}`, pass);
      chainJobRuns.inc({ job, outcome: run.ran ? 'done' : 'skipped' });
      return run.ran ? run.value : await skipped();
    } catch (err) {
      chainJobRuns.inc({ job, outcome: 'failed' });
      throw err;
    }
  }

  private async indexPass(): Promise<PollResult> {
    const gateway = this.chain.gateway;
    const head = await this.chain.clock.headBlock();
    const target = lastConfirmedBlock(head, this.config.env.CONFIRMATIONS);
    let cursor = (await this.cursors.read(CURSOR)) ?? this.config.env.ESCROW_DEPLOY_BLOCK - 1;
    let reorgForkBlock: number | undefined;
    const [last] = cursor >= 0 ? await this.repo.rememberedBlocks(cursor, 1) : [];
    if (last && last.blockNumber === cursor && (await this.chain.clock.getBlockHash(cursor)) !== last.blockHash) {
      reorgForkBlock = await this.findFork(cursor);
      await this.rollbackTo(reorgForkBlock, cursor);
      cursor = reorgForkBlock;
    } else {
      // The API fast path applies logs of blocks the indexer has not read yet; a reorg of only those
      // blocks leaves the cursor block intact, so check their hashes too.
      const orphaned = await this.firstOrphanedBlockAbove(cursor);
      if (orphaned !== null) {
        await this.rollbackTo(orphaned - 1, cursor);
        reorgForkBlock = cursor;
      }
    }
    if (reorgForkBlock !== undefined) reorgs.inc();
    const fromBlock = cursor + 1;
    const toBlock = Math.min(target, cursor + MAX_RANGE);
    if (toBlock < fromBlock) return { fromBlock, toBlock: cursor, events: 0, applied: 0, setAside: 0, reorgForkBlock };
    const events = await gateway.getEscrowEvents(fromBlock, toBlock);
    // Traced: applying a log continues the trace of the request that had our relayer send its transaction.
    const origins = tracing() ? await this.relayer.relayTraceparents(events.map((e) => e.txHash)) : null;
    let applied = 0;
    let setAside = 0;
    for (const e of events) {
      try {
        const attributes = { 'escrow.action': e.action, 'chain.tx_hash': e.txHash.toLowerCase(), 'chain.log_index': e.logIndex, 'chain.block_number': e.blockNumber };
        if ((await continueTrace(`escrow apply ${e.action}`, origins?.get(e.txHash.toLowerCase()), { attributes }, () => this.projector.apply(e))).applied) applied++;
      } catch (err) {
        if (!isPoison(err)) throw err;
        if (await this.setAside(e, err as Error)) setAside++;
      }
    }
    const toHash = await this.chain.clock.getBlockHash(toBlock);
    const ledger = await this.balance.resolve(await this.releasesToSellers(events));
    await (this.txHost as TxHost).withTransaction(async () => {
      await this.balance.record(ledger);
      for (const e of events) await this.repo.rememberBlock(e.blockNumber, e.blockHash);
      if (toHash) await this.repo.rememberBlock(toBlock, toHash);
      await this.cursors.set(CURSOR, toBlock);
      await this.repo.pruneBlocks(toBlock - KEEP_BLOCKS);
    });
    indexedBlock.set(toBlock);
    chainEvents.inc({ outcome: 'applied' }, applied);
    chainEvents.inc({ outcome: 'duplicate' }, events.length - applied - setAside);
    chainEvents.inc({ outcome: 'set_aside' }, setAside);
    return { fromBlock, toBlock, events: events.length, applied, setAside, reorgForkBlock };
  }

  /**
   * The ledger movements of confirmed events (DESIGN §21): each `released`, and each `resolved` to
   * the seller, of an escrow with a seller organisation moves its amount from the contract to the seller.
   */
  private async releasesToSellers(events: EscrowChainEvent[]): Promise<BalanceMovement[]> {
    const paying = events.filter((e) => e.action === 'released' || (e.action === 'resolved' && e.toSeller));
    const escrows = new Map((await this.repo.findByKeys([...new Set(paying.map((e) => e.escrowKey))])).map((x) => [x.escrowKey, x]));
    return paying.flatMap((e) => {
      const escrow = escrows.get(e.escrowKey);
      if (!escrow?.sellerOrganizationId) return [];
      const source = escrow.checkoutSessionId ? { sourceType: 'checkout_session', sourceId: escrow.checkoutSessionId } : { sourceType: 'escrow', sourceId: escrow.id };
      return [{ type: 'escrow_release' as const, organizationId: escrow.sellerOrganizationId, ...source, cursor: CURSOR, txHash: e.txHash, eventLogIndex: e.logIndex, from: this.chain.gateway.escrowAddress, to: escrow.sellerAddress }];
    });
  }

  /** Records an event the projector refused; true (logged as an error) the first time this log is set aside. */
  private async setAside(e: EscrowChainEvent, err: Error): Promise<boolean> {
    const { action, escrowKey, txHash, logIndex, blockNumber, blockHash, ...data } = e;
    const fresh = await (this.txHost as TxHost).withTransaction(() =>
      this.repo.setAside({
        txHash,
        logIndex,
        escrowKey,
        action,
        blockNumber,
        blockHash,
        reason: err.message,
        data: JSON.parse(JSON.stringify(data, (_, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))) as Record<string, unknown>,
      }),
    );
    const fields = { txHash: txHash.toLowerCase(), logIndex, escrowKey, action, blockNumber, reason: err.message };
    if (fresh) this.logger.error(fields, 'chain event set aside: it cannot be applied to the escrow; indexing continues');
    else this.logger.warn(fields, 'chain event set aside before met again; skipped');
    return fresh;
  }

  /**
   * Relays the release of every due escrow (at most 50), one after another through the relayer queue,
   * then waits for all of them together, each at most {@link AUTO_RELEASE_MINE_TIMEOUT_MS} from its
   * own relay: a pass of N releases costs one mining wait, not N (on a 2 s chain, ten
   * releases land in one block instead of ten). A release refused, failed or not mined by the deadline
   * is logged, counted and left to the next pass (which resumes its live relay: one per intent).
   */
  private async autoReleasePass(): Promise<string[]> {
    const chainNow = new Date((await this.chain.clock.headTimestamp()) * 1000);
    const due = await this.repo.dueForAutoRelease(chainNow);
    const relayed: Array<{ escrow: (typeof due)[number]; relayTxId: string; deadline: number }> = [];
    for (const escrow of due) {
      try {
        // Through the relayer queue, the one sender of the relayer key (its nonces are allocated in
        // Postgres, docs/architecture.md §5); the queue refuses a call that would revert.
        const { relayTxId } = await this.relayer.relay({
          to: this.chain.gateway.escrowAddress,
          data: this.chain.gateway.encodeAct('release', escrow.escrowKey),
          purpose: 'auto-release',
          reference: escrow.id,
        });
        relayed.push({ escrow, relayTxId, deadline: Date.now() + AUTO_RELEASE_MINE_TIMEOUT_MS });
      } catch (err) {
        this.autoReleaseFailed(escrow.id, err);
      }
    }
    const outcomes = await Promise.all(
      relayed.map(async ({ escrow, relayTxId, deadline }) => {
        try {
          const receipt = await this.relayer.waitMined(relayTxId, Math.max(0, deadline - Date.now()));
          if (!receipt) throw new Error(`auto-release relay ${relayTxId} not mined in ${AUTO_RELEASE_MINE_TIMEOUT_MS} ms`);
          const verified = await this.chain.gateway.verifyActionTx(receipt.hash, { escrowKey: escrow.escrowKey, action: 'released' });
          await this.projector.apply(verified.event, verified.from);
          return escrow.id;
        } catch (err) {
          this.autoReleaseFailed(escrow.id, err);
          return null;
        }
      }),
    );
    return outcomes.filter((id): id is string => id !== null);
  }

  private autoReleaseFailed(escrowId: string, err: unknown): void {
    chainJobItemFailures.inc({ job: 'auto-release' });
    const reason = err instanceof ChainTxError ? (err.errorName ?? err.message) : (err as Error).message;
    this.logger.warn({ escrowId, reason }, 'auto-release not possible yet');
  }

  private async findFork(cursor: number): Promise<number> {
    for (const b of await this.repo.rememberedBlocks(cursor - 1)) {
      if ((await this.chain.clock.getBlockHash(b.blockNumber)) === b.blockHash) return b.blockNumber;
    }
    return this.config.env.ESCROW_DEPLOY_BLOCK - 1;
  }

  /** Lowest block above `cursor` holding applied events whose hash is no longer canonical, or null. */
  private async firstOrphanedBlockAbove(cursor: number): Promise<number | null> {
    for (const b of await this.repo.appliedBlocksAbove(cursor)) {
      if ((await this.chain.clock.getBlockHash(b.blockNumber)) !== b.blockHash) return b.blockNumber;
    }
    return null;
  }

  /** Forgets what was applied above `fork`, re-derives those escrows; the cursor never moves forward here. */
  private async rollbackTo(fork: number, cursor: number): Promise<void> {
    this.logger.error({ forkBlock: fork, cursor }, 'chain reorg of applied blocks; re-deriving escrows from the canonical chain');
    await (this.txHost as TxHost).withTransaction(async () => {
      const affected = await this.repo.rollbackAbove(fork);
      for (const id of affected) await this.projector.rebuild(id);
      await this.cursors.rewind(CURSOR, Math.min(fork, cursor));
    });
  }
}

/** SQLSTATEs a row's own values cause (not null, check, data exceptions such as numeric overflow): retrying cannot help. */
const ROW_VALUE_ERRORS = /^(23502|23514|22\w{3})$/;

/**
 * Whether applying an event failed for a reason retrying cannot fix: it does not fold onto the
 * escrow's events, or the database refuses the row's values. Races (unique or foreign-key
 * violations), connection and RPC failures are not: the pass fails and the next one retries.
 */
function isPoison(err: unknown): boolean {
  if (err instanceof EscrowTransitionError) return true;
  const code = err instanceof QueryFailedError ? (err.driverError as { code?: string } | undefined)?.code : undefined;
  return typeof code === 'string' && ROW_VALUE_ERRORS.test(code);
}
