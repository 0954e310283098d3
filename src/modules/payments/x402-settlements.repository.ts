import { Injectable } from '@nestjs/common';
import { In, IsNull } from 'typeorm';
import { TransactionHost, TxHost } from '../../database/transaction';
import { lockReceivedRow, type ReceivedMoney } from './received-money';
import { X402Settlement } from './x402-settlement.entity';

/** What a paid retry reserves: the verified EIP-3009 authorization, whole, and the challenge it pays (amounts base units, times unix seconds, as decimal text). */
export interface X402Reservation {
  payer: string;
  nonce: string;
  to: string;
  value: string;
  validAfter: string;
  validBefore: string;
  signature: string;
  payeeHandle: string;
  resource: string;
}

/** Statuses of a settlement still to be decided on chain (`reserved` is the legacy `pending`). */
const OPEN: X402Settlement['status'][] = ['reserved', 'pending'];

/**
 * Postgres I/O of x402 settlements, the one writer and reader of table x402_settlements in the
 * application (docs/architecture.md §14, §18; STYLE.md: repositories hold all SQL; the operators'
 * reconciliation reads it from the chain room by its own SQL, which may not name a domain). Every
 * call runs in the caller's transaction, if any. Leases are timed by the database's clock
 * (`now()`), so replicas with skewed clocks agree on who holds a row.
 */
@Injectable()
export class X402SettlementsRepository {
  constructor(private readonly txHost: TransactionHost) {}

  private get em() {
    return (this.txHost as TxHost).tx;
  }

  private get repo() {
    return this.em.getRepository(X402Settlement);
  }

  /**
   * The settlement `id` paid to the payee handle `handle` (a receiving organisation's handle), locked
   * FOR UPDATE until the caller's transaction ends (a refund's bound, DESIGN §21), or null. Must run in a transaction.
   */
  lockReceivedBy(id: string, handle: string): Promise<ReceivedMoney | null> {
    return lockReceivedRow(this.em, `SELECT id, status, amount, pay_to AS payee, payer FROM x402_settlements WHERE id = $1 AND payee_handle = $2 FOR UPDATE`, id, handle);
  }


  /** The settlement of (payer, nonce) (any letter case), or null. */
  find(payer: string, nonce: string): Promise<X402Settlement | null> {
    return this.repo.findOneBy({ payer: payer.toLowerCase(), nonce: nonce.toLowerCase() });
  }

  /** The settlement with primary key `id`, or null. */
  findById(id: string): Promise<X402Settlement | null> {
    return this.repo.findOneBy({ id });
  }

  /**
   * Inserts (payer, nonce) as `pending`, leased for `leaseMs`, with the whole authorization.
   * Raw on purpose: `ON CONFLICT … DO NOTHING RETURNING` decides the race between two requests
   * carrying the same authorization in one statement, and the lease is timed by the database clock.
   * @returns false when (payer, nonce) is already reserved.
   */
  async reserve(id: string, r: X402Reservation, leaseMs: number): Promise<boolean> {
    const rows: unknown[] = await this.em.query(
      `INSERT INTO x402_settlements (id, payer, nonce, pay_to, payee_handle, amount, resource, status, valid_after, valid_before, signature, lease_until)
       VALUES ($1, lower($2), lower($3), $4, $5, $6, $7, 'pending', $8, $9, $10, now() + $11 * interval '1 millisecond')
       ON CONFLICT (payer, nonce) DO NOTHING RETURNING id`,
      [id, r.payer, r.nonce, r.to, r.payeeHandle, r.value, r.resource, r.validAfter, r.validBefore, r.signature, leaseMs],
    );
    return rows.length === 1;
  }

  /**
   * Takes the lease of an open settlement that nobody holds (none, or expired), for `leaseMs`, and
   * marks it `pending`. @returns whether this call took it.
   */
  async claim(id: string, leaseMs: number): Promise<boolean> {
    const result = await this.repo
      .createQueryBuilder()
      .update()
      .set({ status: 'pending', leaseUntil: () => `now() + :leaseMs * interval '1 millisecond'`, updatedAt: () => 'now()' })
      .where('id = :id AND status IN (:...open) AND (lease_until IS NULL OR lease_until < now())', { id, open: OPEN })
      .setParameter('leaseMs', leaseMs)
      .execute();
    return result.affected === 1;
  }

  /** Gives the lease back (updated_at unchanged: the sweep's idle clock counts from the last change). */
  async release(id: string): Promise<void> {
    await this.repo.update({ id }, { leaseUntil: null });
  }

  /** Records the one 200 answer of a settled payment. @returns false when it was already given. */
  async markAnswered(id: string): Promise<boolean> {
    const result = await this.repo.update({ id, status: 'settled', answeredAt: IsNull() }, { answeredAt: () => 'now()' });
    return result.affected === 1;
  }

  /** Open settlements nobody holds, unchanged for `idleSeconds`, oldest first (at most `limit`). */
  async idle(idleSeconds: number, limit = 100): Promise<string[]> {
    const rows = await this.repo
      .createQueryBuilder('s')
      .select('s.id')
      .where('s.status IN (:...open)', { open: OPEN })
      .andWhere('(s.lease_until IS NULL OR s.lease_until < now())')
      .andWhere(`s.updated_at < now() - :idleSeconds * interval '1 second'`, { idleSeconds })
      .orderBy('s.updated_at')
      .limit(limit)
      .getMany();
    return rows.map((r) => r.id);
  }

  /** Notes why our relay was refused (at most 500 characters); the status is unchanged. */
  async noteError(id: string, error: string): Promise<void> {
    await this.repo.update({ id }, { error: error.slice(0, 500), updatedAt: () => 'now()' });
  }

  /** An open settlement → `failed` with `reason`; a decided one is left as it is. */
  async fail(id: string, reason: string): Promise<void> {
    await this.repo.update({ id, status: In(OPEN) }, { status: 'failed', error: reason, updatedAt: () => 'now()' });
  }

  /**
   * `AuthorizationUsed(payer, nonce)` seen on chain at CONFIRMATIONS (by the indexer or a relay's
   * receipt; docs/architecture.md §18): the settlement of (payer, nonce) (any letter case) that is
   * not yet settled → `settled` with `txHash`, its error cleared. Runs in the caller's transaction
   * (the payment it settles with is written in the same one); no row is no change.
   */
  async markSettled(payer: string, nonce: string, txHash: string, block: number): Promise<void> {
    await this.repo
      .createQueryBuilder()
      .update()
      .set({ status: 'settled', txHash, settledBlock: block, error: null, updatedAt: () => 'now()' })
      .where('payer = lower(:payer) AND nonce = lower(:nonce) AND (status <> :settled OR settled_block IS DISTINCT FROM :block OR tx_hash IS DISTINCT FROM :txHash)', {
        payer,
        nonce,
        settled: 'settled',
        block,
        txHash,
      })
      .execute();
  }

  /** The settlements among authorizations `uses` (payer, nonce) paying an organisation (by its handle): the ledger's `x402` rows (DESIGN §21). */
  settlementsToOrganizations(uses: ReadonlyArray<{ authorizer: string; nonce: string }>): Promise<Array<{ id: string; payer: string; nonce: string; payTo: string; organizationId: string }>> {
    if (uses.length === 0) return Promise.resolve([]);
    return this.repo.query(
      `SELECT s.id, s.payer, s.nonce, s.pay_to AS "payTo", h.organization_id AS "organizationId"
         FROM x402_settlements s JOIN payee_handles h ON h.handle = lower(s.payee_handle) AND h.organization_id IS NOT NULL
        WHERE (s.payer, s.nonce) IN (SELECT * FROM unnest($1::text[], $2::text[]))`,
      [uses.map((u) => u.authorizer.toLowerCase()), uses.map((u) => u.nonce.toLowerCase())],
    );
  }

  /**
   * Reorg unwind (DESIGN §22; issue 29 finding 4): settlements recorded as settled in blocks
   * `fromBlock`..`toBlock` whose authorization the chain's logs of that range no longer show used
   * (`stillUsed`: `payer:nonce`, lower case) go back to `pending`, their transaction forgotten. A 200
   * already answered stays answered (`answered_at` is kept: the resource was served); reconciliation
   * reports such a row until it is mined again. The sweep resumes it. @returns the ids taken back.
   */
  async unwindSettled(fromBlock: number, toBlock: number, stillUsed: string[]): Promise<string[]> {
    const rows: Array<{ id: string }> | [Array<{ id: string }>, number] = await this.em.query(
      `UPDATE x402_settlements SET status = 'pending', tx_hash = NULL, settled_block = NULL, updated_at = now()
        WHERE status = 'settled' AND settled_block BETWEEN $1 AND $2 AND NOT (payer || ':' || nonce = ANY($3::text[])) RETURNING id`,
      [fromBlock, toBlock, stillUsed],
    );
    const list = rows.length === 2 && Array.isArray(rows[0]) && typeof rows[1] === 'number' ? (rows[0] as Array<{ id: string }>) : (rows as Array<{ id: string }>);
    return list.map((r) => r.id);
  }

  /**
   * `AuthorizationCanceled(payer, nonce)` seen on chain (docs/architecture.md §18): the open
   * settlement of (payer, nonce) (any letter case) → `failed` with error `cancelled`; a decided one is
   * left as it is. Runs in the caller's transaction (the indexer pass's, with its cursor).
   */
  async markCancelled(payer: string, nonce: string): Promise<void> {
    await this.repo
      .createQueryBuilder()
      .update()
      .set({ status: 'failed', error: 'cancelled', updatedAt: () => 'now()' })
      .where('payer = lower(:payer) AND nonce = lower(:nonce) AND status IN (:...open)', { payer, nonce, open: OPEN })
      .execute();
  }

  /** Adds `delta` base units (negative after a reorg) to the row's `refunded_units`, in the caller's transaction (refunds, DESIGN §21). */
  async addRefunded(id: string, delta: bigint): Promise<void> {
    await this.em.query(`UPDATE x402_settlements SET refunded_units = refunded_units + $2 WHERE id = $1`, [id, delta.toString()]);
  }

  /** The row's `refunded_units` (base units; 0 when there is no such row). */
  async refundedUnits(id: string): Promise<bigint> {
    const rows = (await this.em.query(`SELECT refunded_units::text AS r FROM x402_settlements WHERE id = $1`, [id])) as Array<{ r: string }>;
    return rows[0] ? BigInt(rows[0].r) : 0n;
  }
}
