import { Injectable } from '@nestjs/common';
import { TransactionHost, TxHost } from '../database/transaction';
import { ChainCursor } from './chain-cursor.entity';

/** The escrow indexer's cursor (src/modules/escrow/escrow-indexer.service.ts). */
export const ESCROW_CURSOR = 'escrow';
/** The USDC authorization indexer's cursor (payments settle from it; the agents' balance read uses it). */
export const AUTHORIZATION_CURSOR = 'usdc-authorizations';

/**
 * Called when an indexer's cursor `name` moves back to `block` after a reorg (DESIGN §22), inside the
 * rewind's transaction: whatever a domain recorded from that indexer's blocks above `block` is to be
 * forgotten there, so the indexer re-derives it from the new chain.
 */
export type CursorRewindListener = (name: string, block: number) => Promise<void>;

/**
 * The one reader and writer of `chain_cursors` (issue 19: "the cursors through one repository"):
 * how far each indexer has applied the chain. Runs inside the caller's CLS transaction when one is
 * open, so a cursor moves in the same transaction as the rows it covers (DESIGN §18).
 */
@Injectable()
export class ChainCursors {
  private readonly rewindListeners: CursorRewindListener[] = [];

  constructor(private readonly txHost: TransactionHost) {}

  /** Registers a {@link CursorRewindListener} (domains register theirs at start-up; the chain room knows none by name). */
  onRewind(listener: CursorRewindListener): void {
    this.rewindListeners.push(listener);
  }

  private get em() {
    return (this.txHost as TxHost).tx;
  }

  /** @returns the last block applied by indexer `name`, or null before its first pass. */
  async read(name: string): Promise<number | null> {
    const row = await this.em.findOneBy(ChainCursor, { name });
    return row ? row.blockNumber : null;
  }

  /** Sets the cursor to `blockNumber`, also backwards (the escrow indexer rewinds to a fork block after a reorg). */
  async set(name: string, blockNumber: number): Promise<void> {
    await this.em.query(
      `INSERT INTO chain_cursors (name, block_number, updated_at) VALUES ($1, $2, now())
       ON CONFLICT (name) DO UPDATE SET block_number = EXCLUDED.block_number, updated_at = now()`,
      [name, blockNumber],
    );
  }

  /** @returns the cursor with the hash of its block (null where the indexer keeps none), or null before the first pass. */
  async readMark(name: string): Promise<{ blockNumber: number; blockHash: string | null } | null> {
    const row = await this.em.findOneBy(ChainCursor, { name });
    return row ? { blockNumber: row.blockNumber, blockHash: row.blockHash } : null;
  }

  /**
   * Moves the cursor forward to `blockNumber` (with that block's hash), never back: two passes racing
   * keep the furthest; right after a {@link rewind} the rewound value is the one it moves from.
   */
  async advance(name: string, blockNumber: number, blockHash: string | null = null): Promise<void> {
    await this.em.query(
      `INSERT INTO chain_cursors (name, block_number, block_hash, updated_at) VALUES ($1, $2, $3, now())
       ON CONFLICT (name) DO UPDATE SET block_number = EXCLUDED.block_number, block_hash = EXCLUDED.block_hash, updated_at = now()
       WHERE chain_cursors.block_number <= EXCLUDED.block_number`,
      [name, blockNumber, blockHash],
    );
  }

  /**
   * Moves the cursor back to `blockNumber` after a reorg below it, forgetting its block hash (DESIGN §18),
   * and runs the rewind listeners in the same transaction (a savepoint inside the caller's).
   */
  async rewind(name: string, blockNumber: number): Promise<void> {
    await (this.txHost as TxHost).withTransaction(async () => {
      await this.em.query(
        `INSERT INTO chain_cursors (name, block_number, block_hash, updated_at) VALUES ($1, $2, NULL, now())
         ON CONFLICT (name) DO UPDATE SET block_number = EXCLUDED.block_number, block_hash = NULL, updated_at = now()`,
        [name, blockNumber],
      );
      for (const listener of this.rewindListeners) await listener(name, blockNumber);
    });
  }
}
