import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * How far an indexer has read the chain (migrations/1795300005000-Escrow.ts): one row per indexer
 * (`escrow`, `usdc-authorizations`), the last block number applied.
 */
@Entity('chain_cursors')
export class ChainCursor {
  @PrimaryColumn('text') name: string;
  // Block numbers stay far below 2^53: a number, as ethers gives them.
  @Column('bigint', { name: 'block_number', transformer: { to: (v: number) => v, from: (v: string) => Number(v) } }) blockNumber: number;
  /** The hash of that block where the indexer keeps it (the authorization indexer's reorg check; migrations/1795300077500-ChainCursorHash.ts). */
  @Column('text', { name: 'block_hash', nullable: true }) blockHash: string | null;
  @Column('timestamptz', { name: 'updated_at', default: () => 'now()' }) updatedAt: Date;
}
