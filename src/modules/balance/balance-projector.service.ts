import { Injectable, OnModuleInit } from '@nestjs/common';
import { readTokenTransfers, type MinedTokenTransfers } from '@lib/chain';
import { getAddress } from 'ethers';
import { v5 as uuidv5 } from 'uuid';
import { ChainAccess } from '../../chain/chain-access.service';
import { ChainCursors } from '../../chain/chain-cursors.repository';
import { BalanceTransaction, balanceTypeOf, type BalanceTransactionType } from './balance-transaction.entity';
import { BalanceRepository } from './balance.repository';

/** UUIDv5 namespace of balance transaction ids (a fixed random UUID; never change it: ids are derived from it). */
const BALANCE_ID_NAMESPACE = '0b7d3c1e-5a40-4f52-9c61-3f1c8e2d7a90';

/** The id of the ledger row of USDC Transfer log (txHash, logIndex): UUIDv5, so a reorg that re-adds the row keeps it (DESIGN §21). */
export function balanceTransactionId(txHash: string, logIndex: number): string {
  return uuidv5(`${txHash.toLowerCase()}:${logIndex}`, BALANCE_ID_NAMESPACE);
}

/**
 * A movement an indexer saw at the confirmation depth, before its Transfer log is read: the event
 * at `eventLogIndex` of `txHash` caused the first USDC `Transfer` after it in that transaction from
 * `from` to `to` (a `Released` or `Resolved` log before the escrow's transfer, an
 * `AuthorizationUsed` before the token's).
 */
export interface BalanceMovement {
  type: BalanceTransactionType;
  organizationId: string;
  sourceType: string;
  sourceId: string;
  /** chain_cursors.name of the indexer reporting it: its rewind removes the row. */
  cursor: string;
  txHash: string;
  eventLogIndex: number;
  from: string;
  to: string;
}

/**
 * A writer's rule, run again for reconciliation (DESIGN §21): the movements it would record for
 * `organizationId` from the canonical chain in blocks `[fromBlock, toBlock]`, no further than the
 * writer has read (its cursor). Network and read-only database calls; no transaction.
 */
export type BalanceMovementSource = (organizationId: string, fromBlock: number, toBlock: number) => Promise<BalanceMovement[]>;

/**
 * Writes the ledger from chain events (DESIGN §21, §22): indexers hand their movements to
 * {@link resolve} outside any transaction (it reads each transaction's USDC Transfer logs and block
 * time from the node) and {@link record} the result in the transaction that advances their cursor.
 * When a cursor rewinds, the rows its indexer wrote above the new cursor are deleted in the rewind's
 * transaction (registered with {@link ChainCursors.onRewind}), and the indexer writes them again
 * from the new chain under the same ids.
 */
@Injectable()
export class BalanceProjector implements OnModuleInit {
  private readonly movementSources = new Map<string, BalanceMovementSource>();

  constructor(
    private readonly repo: BalanceRepository,
    private readonly chain: ChainAccess,
    private readonly cursors: ChainCursors,
  ) {}

  onModuleInit(): void {
    this.cursors.onRewind(async (name, block) => {
      await this.repo.removeAbove(name, block);
    });
  }

  /**
   * Registers a writer's {@link BalanceMovementSource} under `name` (the escrow indexer, the
   * authorization indexer, the refund watcher register theirs at start-up; the ledger knows none by name).
   */
  registerSource(name: string, source: BalanceMovementSource): void {
    this.movementSources.set(name, source);
  }

  /** The registered movement sources, by name. */
  sources(): ReadonlyMap<string, BalanceMovementSource> {
    return this.movementSources;
  }

  /**
   * The ledger rows of `movements`: amount and log index from the matching USDC Transfer log (signed
   * by the type), block number and time from its block. A movement without its Transfer log, or of
   * value 0, gives no row. Must not be called inside a database transaction (node reads).
   * @throws the provider's error when the node does not answer (the indexer pass fails and retries).
   */
  async resolve(movements: readonly BalanceMovement[]): Promise<BalanceTransaction[]> {
    const receipts = new Map<string, MinedTokenTransfers>();
    const rows: BalanceTransaction[] = [];
    for (const m of movements) {
      const sign = balanceTypeOf(m.type).sign;
      const key = m.txHash.toLowerCase();
      let mined = receipts.get(key);
      if (!mined) {
        mined = await readTokenTransfers(this.chain.provider, this.chain.usdc.address, m.txHash);
        receipts.set(key, mined);
      }
      const from = getAddress(m.from);
      const to = getAddress(m.to);
      const transfer = mined.transfers.filter((t) => t.logIndex > m.eventLogIndex).sort((a, b) => a.logIndex - b.logIndex)[0];
      if (!transfer || transfer.from !== from || transfer.to !== to || transfer.value === 0n) continue;
      rows.push(
        Object.assign(new BalanceTransaction(), {
          id: balanceTransactionId(mined.txHash, transfer.logIndex),
          organizationId: m.organizationId,
          type: m.type,
          amount: sign * transfer.value,
          fee: 0n,
          currency: 'USDC',
          sourceType: m.sourceType,
          sourceId: m.sourceId,
          txHash: mined.txHash.toLowerCase(),
          logIndex: transfer.logIndex,
          blockNumber: mined.blockNumber,
          blockTimestamp: new Date(mined.blockTimestamp * 1000),
          cursor: m.cursor,
        }),
      );
    }
    return rows;
  }

  /**
   * Deletes the rows of the Transfer logs `logs` (txHash, logIndex), in the caller's transaction: for a
   * writer that follows single transactions rather than a cursor (the refund watcher, whose refund a
   * reorg took back to `pending`; DESIGN §21, §22). The log mined again is recorded under the same id.
   * @returns how many rows were deleted.
   */
  unrecord(logs: ReadonlyArray<{ txHash: string; logIndex: number }>): Promise<number> {
    return this.repo.removeIds(logs.map((l) => balanceTransactionId(l.txHash, l.logIndex)));
  }

  /** Inserts the rows not yet recorded, in the caller's transaction (the indexer's, with its cursor). @returns how many were new. */
  record(rows: BalanceTransaction[]): Promise<number> {
    return this.repo.insertIfAbsent(rows);
  }
}
