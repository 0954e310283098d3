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

/**
 * A refund's source as the bound needs it, read under the source's row lock: who may refund it,
 * whether it is refundable now, the amount received (base units) and the addresses the money moves
 * between (DESIGN §21: from the address that received it, to the payer).
 */
export interface RefundSourceRow {
  id: string;
  organizationId: string;
  /** Null when the source is refundable; else why not (e.g. `escrow_not_released`). */
  notRefundable: string | null;
  /** The source's own status, for the 409's details. */
  status: string;
  received: bigint;
  fromAddress: string | null;
  toAddress: string | null;
}

/** All I/O of refunds, and the row locks of their sources (DESIGN §21; their `refunded_units` are written by each source's module). */
@Injectable()
export class RefundsRepository {
  constructor(private readonly txHost: TransactionHost) {}

  private get em() {
    return (this.txHost as TxHost).tx;
  }

  /**
   * The source `id` of `type` visible to `organizationId` as the party that received the money, locked
   * FOR UPDATE (the bound's lock, DESIGN §21); null when there is none. Must run in a transaction.
   * - checkout_session: the organisation's checkout; refundable once its escrow is `released` (unflagged);
   *   received = the escrow's amount, from = the escrow's seller, to = its buyer.
   */
  async lockSource(type: RefundSourceType, id: string, organizationId: string): Promise<RefundSourceRow | null> {
    if (type === 'checkout_session') {
      const rows = (await this.em.query(
        `SELECT cs.id, cs.organization_id, cs.status, e.status AS escrow_status, e.flag, e.amount_units, e.seller_address, e.buyer_address
           FROM checkout_sessions cs LEFT JOIN escrows e ON e.id = cs.escrow_id
          WHERE cs.id = $1 AND cs.organization_id = $2
          FOR UPDATE OF cs`,
        [id, organizationId],
      )) as Array<Record<string, string | null>>;
      const r = rows[0];
      if (!r) return null;
      const released = r.escrow_status === 'released' && !r.flag;
      return {
        id: r.id!,
        organizationId: r.organization_id!,
        notRefundable: released ? null : 'not_released',
        status: r.status!,
        received: released ? BigInt(r.amount_units!) : 0n,
        fromAddress: r.seller_address,
        toAddress: r.buyer_address,
      };
    }
    return this.lockReceived(type, id, organizationId);
  }

  /** Payments and x402 settlements received by `organizationId` (see {@link lockSource}). */
  private async lockReceived(type: RefundSourceType, id: string, organizationId: string): Promise<RefundSourceRow | null> {
    if (type === 'payment') {
      const rows = (await this.em.query(
        `SELECT p.id, p.status, p.amount, p.to_address, p.from_address
           FROM payments p JOIN organizations o ON o.handle = p.to_handle
          WHERE p.id = $1 AND o.id = $2
          FOR UPDATE OF p`,
        [id, organizationId],
      )) as Array<Record<string, string | null>>;
      const r = rows[0];
      if (!r) return null;
      const ok = r.status === 'succeeded';
      return { id: r.id!, organizationId, notRefundable: ok ? null : 'not_received', status: r.status!, received: ok ? BigInt(r.amount!) : 0n, fromAddress: r.to_address, toAddress: r.from_address };
    }
    const rows = (await this.em.query(
      `SELECT s.id, s.status, s.amount, s.pay_to, s.payer
         FROM x402_settlements s JOIN organizations o ON o.handle = s.payee_handle
        WHERE s.id = $1 AND o.id = $2
        FOR UPDATE OF s`,
      [id, organizationId],
    )) as Array<Record<string, string | null>>;
    const r = rows[0];
    if (!r) return null;
    const ok = r.status === 'settled';
    return { id: r.id!, organizationId, notRefundable: ok ? null : 'not_received', status: r.status!, received: ok ? BigInt(r.amount!) : 0n, fromAddress: r.pay_to, toAddress: r.payer };
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
