import { Injectable } from '@nestjs/common';
import { In } from 'typeorm';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import { AppError } from '../../common/errors/app-error';
import { TransactionHost, TxHost } from '../../database/transaction';
import { Escrow, EscrowChainEventRow } from './escrow.entity';
import type { EscrowStatus } from './escrow.state';

/** All I/O of escrows and their applied chain events (docs/architecture.md, Conventions 4); the indexer's cursor is the chain room's (src/chain/chain-cursors.repository.ts). */
@Injectable()
export class EscrowRepository {
  constructor(private readonly txHost: TransactionHost) {}

  private get em() {
    return (this.txHost as TxHost).tx;
  }

  /**
   * Records an applied log; false when (txHash, logIndex) was applied before (docs/architecture.md §7: a log is
   * applied once).
   */
  async insertChainEvent(row: EscrowChainEventRow): Promise<boolean> {
    const result = await this.em
      .createQueryBuilder()
      .insert()
      .into(EscrowChainEventRow)
      .values(row as QueryDeepPartialEntity<EscrowChainEventRow>)
      .orIgnore()
      .execute();
    return (result.raw as unknown[]).length > 0;
  }

  findChainEvent(txHash: string, logIndex: number) {
    return this.em.getRepository(EscrowChainEventRow).findOneBy({ txHash: txHash.toLowerCase(), logIndex });
  }

  chainEvents(escrowId: string) {
    return this.em.getRepository(EscrowChainEventRow).find({ where: { escrowId }, order: { blockNumber: 'ASC', logIndex: 'ASC' } });
  }

  findByKeyForUpdate(escrowKey: string) {
    return this.em.getRepository(Escrow).findOne({ where: { escrowKey }, lock: { mode: 'pessimistic_write' } });
  }

  /** The escrows of `escrowKeys` (no lock): the seller side of releases for the ledger (src/modules/balance). */
  findByKeys(escrowKeys: string[]) {
    return escrowKeys.length ? this.em.getRepository(Escrow).find({ where: { escrowKey: In(escrowKeys) } }) : Promise.resolve([]);
  }

  findById(id: string) {
    return this.em.getRepository(Escrow).findOneBy({ id });
  }

  /**
   * Creates the escrow row unless one exists for its key (`INSERT … ON CONFLICT DO NOTHING`): the
   * API path and the indexer may record one funding at once, and the loser waits for the winner's
   * commit here instead of failing on the unique key (docs/architecture.md §7: one writer).
   * @returns true when this call created the row.
   */
  async insertIfAbsent(escrow: Escrow): Promise<boolean> {
    const result = await this.em
      .createQueryBuilder()
      .insert()
      .into(Escrow)
      .values(escrow as QueryDeepPartialEntity<Escrow>)
      .orIgnore()
      .execute();
    return (result.raw as unknown[]).length > 0;
  }

  /** Position (block, log index) of the escrow's newest applied event, or null when it has none. */
  async lastEventPosition(escrowId: string): Promise<{ blockNumber: number; logIndex: number } | null> {
    const rows: Array<{ block_number: string; log_index: number }> = await this.em.query(
      'SELECT block_number, log_index FROM escrow_chain_events WHERE escrow_id = $1 ORDER BY block_number DESC, log_index DESC LIMIT 1',
      [escrowId],
    );
    return rows.length ? { blockNumber: Number(rows[0].block_number), logIndex: rows[0].log_index } : null;
  }

  /**
   * Records a log the ledger could not apply (docs/architecture.md §7: one bad event never blocks
   * the indexer). @returns false when this log was set aside before.
   */
  async setAside(row: { txHash: string; logIndex: number; escrowKey: string; action: string; blockNumber: number; blockHash: string; reason: string; data: Record<string, unknown> }): Promise<boolean> {
    const rows: unknown[] = await this.em.query(
      `INSERT INTO chain_events_set_aside (tx_hash, log_index, escrow_key, action, block_number, block_hash, reason, data)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (tx_hash, log_index) DO NOTHING RETURNING tx_hash`,
      [row.txHash.toLowerCase(), row.logIndex, row.escrowKey.toLowerCase(), row.action, row.blockNumber, row.blockHash, row.reason, JSON.stringify(row.data)],
    );
    return rows.length > 0;
  }

  /** Writes the derived state; also sets `escrow.updatedAt`, so a response rendered from it matches a later read. */
  async update(escrow: Escrow): Promise<void> {
    escrow.updatedAt = new Date();
    const { id, status, deliveredAt, autoReleaseAt, updatedAt } = escrow;
    await this.em.getRepository(Escrow).update({ id }, { status, deliveredAt, autoReleaseAt, updatedAt });
  }

  async delete(id: string): Promise<void> {
    await this.em.getRepository(Escrow).delete({ id });
  }

  /** An escrow the organisation is buyer or seller of, or null. */
  findForOrganization(organizationId: string, id: string) {
    return this.em
      .getRepository(Escrow)
      .createQueryBuilder('e')
      .where('e.id = :id', { id })
      .andWhere('(e.seller_organization_id = :org OR e.buyer_organization_id = :org)', { org: organizationId })
      .getOne();
  }

  /**
   * Newest first, `limit + 1` rows of escrows the organisation is a party to (keyset on
   * (created_at, id), docs/architecture.md §6, as `keysetPage` in src/common/http/keyset.ts).
   *
   * "Seller or buyer" is two keyset branches, each an index range scan of its own index
   * (`escrows_seller_org_idx`, `escrows_buyer_org_idx`) taking at most `limit + 1` ids, merged by
   * the outer ORDER BY: one `seller = org OR buyer = org` condition would read every escrow of the
   * organisation and sort them, a cost that grows with its history (DESIGN §23; the plan is checked
   * by test/integration/scale-plans.int-spec.ts).
   * @throws AppError invalid_request (starting_after) for a cursor the organisation cannot see.
   */
  async list(organizationId: string, opts: { limit: number; startingAfter?: string; role?: 'buyer' | 'seller'; status?: EscrowStatus }): Promise<Escrow[]> {
    const params: Record<string, unknown> = { org: organizationId, n: opts.limit + 1 };
    const visible = '(c.seller_organization_id = :org OR c.buyer_organization_id = :org)';
    let cursor = '';
    if (opts.startingAfter) {
      params.cursor = opts.startingAfter;
      cursor = `AND (x.created_at, x.id) < ((SELECT c.created_at FROM escrows c WHERE c.id = :cursor AND ${visible}), :cursor)`;
    }
    let status = '';
    if (opts.status) {
      params.status = opts.status;
      status = 'AND x.status = :status';
    }
    const sides = opts.role ? [opts.role] : (['seller', 'buyer'] as const);
    const branches = sides.map(
      (side) => `(SELECT x.id FROM escrows x WHERE x.${side}_organization_id = :org ${status} ${cursor} ORDER BY x.created_at DESC, x.id DESC LIMIT :n)`,
    );
    const rows = await this.em
      .getRepository(Escrow)
      .createQueryBuilder('e')
      .where(`e.id IN (${branches.join(' UNION ALL ')})`, params)
      .orderBy('e.created_at', 'DESC')
      .addOrderBy('e.id', 'DESC')
      .take(opts.limit + 1)
      .getMany();
    if (opts.startingAfter && rows.length === 0) {
      const seen: unknown[] = await this.em.query(`SELECT 1 FROM escrows c WHERE c.id = $1 AND (c.seller_organization_id = $2 OR c.buyer_organization_id = $2)`, [
        opts.startingAfter,
        organizationId,
      ]);
      if (seen.length === 0) throw AppError.invalidParam('starting_after', 'is not an id from a previous page of this list');
    }
    return rows;
  }

  /** Delivered, unflagged escrows whose inspection window has passed (auto-release candidates). */
  dueForAutoRelease(now: Date, limit = 50) {
    return this.em
      .getRepository(Escrow)
      .createQueryBuilder('e')
      .where("e.status = 'delivered' AND e.auto_release_at <= :now AND e.flag IS NULL", { now })
      .orderBy('e.auto_release_at', 'ASC')
      .take(limit)
      .getMany();
  }

  async rememberBlock(blockNumber: number, blockHash: string): Promise<void> {
    await this.em.query(
      `INSERT INTO chain_blocks (block_number, block_hash) VALUES ($1, $2) ON CONFLICT (block_number) DO UPDATE SET block_hash = EXCLUDED.block_hash`,
      [blockNumber, blockHash],
    );
  }

  /** Remembered blocks at or below `blockNumber`, newest first (reorg fork search). */
  async rememberedBlocks(atOrBelow: number, limit = 256): Promise<Array<{ blockNumber: number; blockHash: string }>> {
    const rows: Array<{ block_number: string; block_hash: string }> = await this.em.query(
      'SELECT block_number, block_hash FROM chain_blocks WHERE block_number <= $1 ORDER BY block_number DESC LIMIT $2',
      [atOrBelow, limit],
    );
    return rows.map((r) => ({ blockNumber: Number(r.block_number), blockHash: r.block_hash }));
  }

  /** Distinct blocks above `blockNumber` that hold applied events (the API fast path runs ahead of the indexer), lowest first. */
  async appliedBlocksAbove(blockNumber: number): Promise<Array<{ blockNumber: number; blockHash: string }>> {
    const rows: Array<{ block_number: string; block_hash: string }> = await this.em.query(
      'SELECT DISTINCT block_number, block_hash FROM escrow_chain_events WHERE block_number > $1 ORDER BY block_number',
      [blockNumber],
    );
    return rows.map((r) => ({ blockNumber: Number(r.block_number), blockHash: r.block_hash }));
  }

  /** Forgets everything applied above `forkBlock`; returns the ids of escrows that lost events. */
  async rollbackAbove(forkBlock: number): Promise<string[]> {
    // TypeORM's Postgres driver answers a DELETE with [rows, affected count], not the rows alone.
    const [rows]: [Array<{ escrow_id: string }>, number] = await this.em.query(
      'DELETE FROM escrow_chain_events WHERE block_number > $1 RETURNING escrow_id',
      [forkBlock],
    );
    await this.em.query('DELETE FROM chain_blocks WHERE block_number > $1', [forkBlock]);
    return [...new Set(rows.map((r) => r.escrow_id))];
  }

  async pruneBlocks(below: number): Promise<void> {
    await this.em.query('DELETE FROM chain_blocks WHERE block_number < $1', [below]);
  }
}
