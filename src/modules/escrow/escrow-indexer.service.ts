import { Injectable, Logger } from '@nestjs/common';
import { ChainTxError } from '@lib/chain';
import { AppConfig } from '../../config/app-config';
import { TransactionHost, TxHost } from '../../database/transaction';
import { CheckoutService } from '../checkout/checkout.service';
import { EscrowChainService } from './escrow-chain.service';
import { EscrowLedger } from './escrow-ledger.service';
import { EscrowRepository } from './escrow.repository';

const CURSOR = 'escrow';
const MAX_RANGE = 2000;
const KEEP_BLOCKS = 10_000;

/** Outcome of one indexer pass. */
export interface PollResult {
  fromBlock: number;
  toBlock: number;
  events: number;
  applied: number;
  /** Set when a reorg of blocks with applied events (read here or by the API fast path) was found: the block indexing resumed after. */
  reorgForkBlock?: number;
}

/**
 * The chain indexer and the escrow schedules (DESIGN §7), run by the worker:
 * - {@link pollOnce} reads CheckoutEscrow logs from the cursor kept in Postgres up to
 *   head − CONFIRMATIONS and applies each through the ledger (once per tx hash + log index). Before
 *   reading it compares the cursor block's hash with the chain; on a mismatch it finds the fork
 *   point among remembered block hashes, forgets the events above it, re-derives the affected
 *   escrows and re-indexes from there. Events the API applied from blocks above the cursor are
 *   checked by their block hash the same way.
 * - {@link autoReleaseDue} releases delivered escrows whose inspection window has passed (by chain
 *   time), sending the release with the relayer key.
 * - {@link expireCheckouts} records expiry of open checkouts.
 */
@Injectable()
export class EscrowIndexer {
  private readonly logger = new Logger(EscrowIndexer.name);

  constructor(
    private readonly repo: EscrowRepository,
    private readonly ledger: EscrowLedger,
    private readonly chain: EscrowChainService,
    private readonly checkout: CheckoutService,
    private readonly config: AppConfig,
    private readonly txHost: TransactionHost,
  ) {}

  async pollOnce(): Promise<PollResult> {
    const gateway = this.chain.gateway;
    const head = await gateway.headBlock();
    const target = head - this.config.env.CONFIRMATIONS;
    let cursor = (await this.repo.getCursor(CURSOR)) ?? this.config.env.ESCROW_DEPLOY_BLOCK - 1;
    let reorgForkBlock: number | undefined;
    const [last] = cursor >= 0 ? await this.repo.rememberedBlocks(cursor, 1) : [];
    if (last && last.blockNumber === cursor && (await gateway.getBlockHash(cursor)) !== last.blockHash) {
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
    const fromBlock = cursor + 1;
    const toBlock = Math.min(target, cursor + MAX_RANGE);
    if (toBlock < fromBlock) return { fromBlock, toBlock: cursor, events: 0, applied: 0, reorgForkBlock };
    const events = await gateway.getEscrowEvents(fromBlock, toBlock);
    let applied = 0;
    for (const e of events) {
      if ((await this.ledger.apply(e)).applied) applied++;
    }
    const toHash = await gateway.getBlockHash(toBlock);
    await (this.txHost as TxHost).withTransaction(async () => {
      for (const e of events) await this.repo.rememberBlock(e.blockNumber, e.blockHash);
      if (toHash) await this.repo.rememberBlock(toBlock, toHash);
      await this.repo.setCursor(CURSOR, toBlock);
      await this.repo.pruneBlocks(toBlock - KEEP_BLOCKS);
    });
    return { fromBlock, toBlock, events: events.length, applied, reorgForkBlock };
  }

  /** Releases due escrows with the relayer key; returns the escrow ids released. */
  async autoReleaseDue(): Promise<string[]> {
    const chainNow = new Date((await this.chain.gateway.headTimestamp()) * 1000);
    const due = await this.repo.dueForAutoRelease(chainNow);
    const released: string[] = [];
    for (const escrow of due) {
      try {
        const txHash = await this.chain.gateway.act(this.chain.relayer, 'release', escrow.escrowKey);
        const verified = await this.chain.gateway.verifyActionTx(txHash, { escrowKey: escrow.escrowKey, action: 'released' });
        await this.ledger.apply(verified.event, verified.from);
        released.push(escrow.id);
      } catch (err) {
        const reason = err instanceof ChainTxError ? (err.errorName ?? err.message) : (err as Error).message;
        this.logger.warn({ escrowId: escrow.id, reason }, 'auto-release not possible yet');
      }
    }
    return released;
  }

  expireCheckouts(): Promise<number> {
    return this.checkout.expireDue(new Date());
  }

  private async findFork(cursor: number): Promise<number> {
    for (const b of await this.repo.rememberedBlocks(cursor - 1)) {
      if ((await this.chain.gateway.getBlockHash(b.blockNumber)) === b.blockHash) return b.blockNumber;
    }
    return this.config.env.ESCROW_DEPLOY_BLOCK - 1;
  }

  /** Lowest block above `cursor` holding applied events whose hash is no longer canonical, or null. */
  private async firstOrphanedBlockAbove(cursor: number): Promise<number | null> {
    for (const b of await this.repo.appliedBlocksAbove(cursor)) {
      if ((await this.chain.gateway.getBlockHash(b.blockNumber)) !== b.blockHash) return b.blockNumber;
    }
    return null;
  }

  /** Forgets what was applied above `fork`, re-derives those escrows; the cursor never moves forward here. */
  private async rollbackTo(fork: number, cursor: number): Promise<void> {
    this.logger.error({ forkBlock: fork, cursor }, 'chain reorg of applied blocks; re-deriving escrows from the canonical chain');
    await (this.txHost as TxHost).withTransaction(async () => {
      const affected = await this.repo.rollbackAbove(fork);
      for (const id of affected) await this.ledger.rebuild(id);
      await this.repo.setCursor(CURSOR, Math.min(fork, cursor));
    });
  }
}
