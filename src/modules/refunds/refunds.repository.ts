import { Injectable } from '@nestjs/common';
import type { QueryDeepPartialEntity } from 'typeorm/query-builder/QueryPartialEntity';
import { keysetPage } from '../../common/http/keyset';
import { TransactionHost, TxHost } from '../../database/transaction';
import { ACTIVE_REFUND_STATUSES, Refund, RefundSourceType, RefundStatus } from './refund.entity';

/**
 * How long a refund failed `expired` or `reorged` stays in the watcher's batch (wall clock since it
 * failed; review F1, docs/decisions.md): a reorg deeper than CONFIRMATIONS may still show its transfer
 * mined, and then it succeeds after all.
 */
export const REVIVABLE_FOR_MS = 60 * 60 * 1000;

/** All I/O of the refunds table (DESIGN §21); their sources are locked and read through the sources' modules ({@link RefundSources}). */
@Injectable()
export class RefundsRepository {
  constructor(private readonly txHost: TransactionHost) {}

  private get em() {
    return (this.txHost as TxHost).tx;
  }

  /** Sum (base units) of the source's refunds that count toward the bound (requires_signature + pending + succeeded), but `exceptId`. */
  async activeSum(type: RefundSourceType, sourceId: string, exceptId?: string): Promise<bigint> {
    const rows = (await this.em.query(
      `SELECT COALESCE(SUM(amount_units), 0)::text AS total FROM refunds
        WHERE source_type = $1 AND source_id = $2 AND status = ANY($3) AND ($4::uuid IS NULL OR id <> $4)`,
      [type, sourceId, ACTIVE_REFUND_STATUSES, exceptId ?? null],
    )) as Array<{ total: string }>;
    return BigInt(rows[0].total);
  }

  async insert(refund: Refund): Promise<void> {
    await this.em.getRepository(Refund).insert(refund as QueryDeepPartialEntity<Refund>);
  }

  findById(id: string): Promise<Refund | null> {
    return this.em.getRepository(Refund).findOneBy({ id });
  }

  findForOrganization(organizationId: string, id: string): Promise<Refund | null> {
    return this.em.getRepository(Refund).findOneBy({ id, organizationId });
  }

  /** The refund locked FOR UPDATE (in the caller's transaction, after its source's lock). */
  lock(id: string): Promise<Refund | null> {
    return this.em.getRepository(Refund).findOne({ where: { id }, lock: { mode: 'pessimistic_write' } });
  }

  /** Applies `patch` and bumps updated_at; returns the row as it is afterwards. */
  async update(id: string, patch: Partial<Refund>): Promise<Refund> {
    await this.em.getRepository(Refund).update({ id }, { ...patch, updatedAt: new Date() } as QueryDeepPartialEntity<Refund>);
    return (await this.findById(id))!;
  }

  /**
   * Stores a relay's hash on a pending signature refund that has none yet (review F2): one guarded
   * UPDATE, so a caller whose copy of the refund is stale never replaces a hash the watcher stored
   * (a succeeded refund's mined transfer) with one the chain never mined.
   * @returns whether the row was updated.
   */
  async setRelayHash(id: string, txHash: string): Promise<boolean> {
    const [, affected] = (await this.em.query(
      `UPDATE refunds SET tx_hash = $2, updated_at = now() WHERE id = $1 AND status = 'pending' AND method = 'signature' AND tx_hash IS NULL`,
      [id, txHash],
    )) as [unknown, number];
    return affected === 1;
  }

  /** Refunds (not failed or cancelled) that claim a log of `txHash` (one refund per transfer log), but `exceptId`. */
  async claimsOf(txHash: string, exceptId: string): Promise<Refund[]> {
    return this.em
      .getRepository(Refund)
      .createQueryBuilder('r')
      .where('r.tx_hash = :txHash AND r.id <> :exceptId', { txHash: txHash.toLowerCase(), exceptId })
      .andWhere("r.status NOT IN ('failed', 'cancelled')")
      .getMany();
  }

  /** The organisation's refunds, newest first (keyset on created_at, id), optionally of one source or status. */
  list(organizationId: string, opts: { limit: number; startingAfter?: string; status?: RefundStatus; sourceType?: RefundSourceType; sourceId?: string }): Promise<Refund[]> {
    return keysetPage(
      () => this.em.getRepository(Refund).createQueryBuilder('r'),
      'r',
      { sql: 'r.organization_id = :org', params: { org: organizationId } },
      opts.limit,
      opts.startingAfter,
      (qb) => {
        if (opts.status) qb.andWhere('r.status = :status', { status: opts.status });
        if (opts.sourceType) qb.andWhere('r.source_type = :sourceType', { sourceType: opts.sourceType });
        if (opts.sourceId) qb.andWhere('r.source_id = :sourceId', { sourceId: opts.sourceId });
      },
    );
  }

  /**
   * What the watcher looks at in one pass (bounded): up to `limit` open refunds (requires_signature,
   * pending) in id order after `afterId` (wrapping round to the first), and succeeded refunds mined at or above `sinceBlock` (a reorg
   * may still remove them).
   */
  /** The organisation's succeeded refunds whose transfer is recorded in blocks `[fromBlock, toBlock]` (ledger reconciliation). */
  succeededInBlocks(organizationId: string, fromBlock: number, toBlock: number): Promise<Refund[]> {
    return this.em
      .getRepository(Refund)
      .createQueryBuilder('r')
      .where("r.organization_id = :organizationId AND r.status = 'succeeded' AND r.block_number BETWEEN :fromBlock AND :toBlock", { organizationId, fromBlock, toBlock })
      .getMany();
  }

  /** The organisation's refunds whose EIP-3009 nonce is one of `nonces` (lower-case hex; ledger reconciliation). */
  withNonces(organizationId: string, nonces: string[]): Promise<Refund[]> {
    if (nonces.length === 0) return Promise.resolve([]);
    return this.em
      .getRepository(Refund)
      .createQueryBuilder('r')
      .where('r.organization_id = :organizationId AND r.auth_nonce IN (:...nonces)', { organizationId, nonces })
      .getMany();
  }

  /**
   * The watcher's batch (DESIGN §21): at most `limit` open refunds from after `afterId` (wrapping to the
   * first), the succeeded ones mined at or above `sinceBlock`, and at most `limit` failed `expired` /
   * `reorged` ones that failed within `revivableForMs` (wall clock).
   */
  async watchBatch(limit: number, sinceBlock: number, afterId: string | null, revivableForMs = REVIVABLE_FOR_MS): Promise<Refund[]> {
    const openFrom = (after: string | null) => {
      const qb = this.em.getRepository(Refund).createQueryBuilder('r').where("r.status IN ('requires_signature', 'pending')");
      if (after) qb.andWhere('r.id > :after', { after });
      return qb.orderBy('r.id', 'ASC').take(limit).getMany();
    };
    let open = await openFrom(afterId);
    // Past the last open refund: start again from the first, so every open refund gets its turn.
    if (open.length < limit && afterId) open = [...open, ...(await openFrom(null)).filter((r) => !open.some((o) => o.id === r.id))].slice(0, limit);
    const recent = await this.em
      .getRepository(Refund)
      .createQueryBuilder('r')
      .where("r.status = 'succeeded' AND r.block_number >= :sinceBlock", { sinceBlock })
      .orderBy('r.block_number', 'DESC')
      .take(limit)
      .getMany();
    // Failed as expired or reorged lately: a reorg deeper than CONFIRMATIONS may still show the transfer mined (review F1).
    const revivable = await this.em
      .getRepository(Refund)
      .createQueryBuilder('r')
      .where("r.status = 'failed' AND r.failure_reason IN ('expired', 'reorged') AND r.updated_at >= :since", { since: new Date(Date.now() - revivableForMs) })
      .orderBy('r.updated_at', 'DESC')
      .take(limit)
      .getMany();
    return [...open, ...recent, ...revivable];
  }
}
