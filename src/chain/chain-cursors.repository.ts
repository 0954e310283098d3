import { Injectable } from '@nestjs/common';
import { TransactionHost, TxHost } from '../database/transaction';
import { ChainCursor } from './chain-cursor.entity';

/** The escrow indexer's cursor (src/modules/escrow/escrow-indexer.service.ts). */
export const ESCROW_CURSOR = 'escrow';
/** The USDC authorization indexer's cursor (payments settle from it; the agents' balance read uses it). */
export const AUTHORIZATION_CURSOR = 'usdc-authorizations';

/**
 * The one reader and writer of `chain_cursors` (issue 19: "the cursors through one repository"):
 * how far each indexer has applied the chain. Runs inside the caller's CLS transaction when one is
 * open, so a cursor moves in the same transaction as the rows it covers (DESIGN §18).
 */
@Injectable()
export class ChainCursors {
  constructor(private readonly txHost: TransactionHost) {}

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

  /** Moves the cursor forward to `blockNumber`, never back (two passes racing keep the furthest). */
  async advance(name: string, blockNumber: number): Promise<void> {
    await this.em.query(
      `INSERT INTO chain_cursors (name, block_number, updated_at) VALUES ($1, $2, now())
       ON CONFLICT (name) DO UPDATE SET block_number = GREATEST(chain_cursors.block_number, EXCLUDED.block_number), updated_at = now()`,
      [name, blockNumber],
    );
  }
}
