import { Injectable } from '@nestjs/common';
import { keysetPage } from '../../common/http/keyset';
import { TransactionHost, TxHost } from '../../database/transaction';
import type { AgentUsage } from '../agents/agent.types';
import { lockReceivedRow, type ReceivedMoney } from './received-money';
import { Payment, PaymentMode, PaymentStatus } from './payment.entity';

/** Postgres I/O of payments (docs/architecture.md, Conventions 4); every call runs in the caller's transaction. */
@Injectable()
export class PaymentsRepository {
  constructor(private readonly txHost: TransactionHost) {}

  private get em() {
    return (this.txHost as TxHost).tx;
  }

  findByKey(agentId: string, idempotencyKey: string): Promise<Payment | null> {
    return this.em.getRepository(Payment).findOneBy({ agentId, idempotencyKey });
  }

  /** The agent's payment for A2A task `taskId` (UNIQUE(agent_id, task_id)), or null. */
  findByTask(agentId: string, taskId: string): Promise<Payment | null> {
    return this.em.getRepository(Payment).findOneBy({ agentId, taskId });
  }

  /**
   * The payments among authorizations `uses` (authorizer, nonce) that pay an organisation directly
   * (modes instant, a2a, and x402 to one of our own challenges: payee an organisation handle), for
   * the ledger (DESIGN §21). Agent escrows reach the seller through the escrow's release.
   */
  paymentsToOrganizations(uses: ReadonlyArray<{ authorizer: string; nonce: string }>): Promise<Array<{ id: string; mode: PaymentMode; fromAddress: string; nonce: string; toAddress: string; organizationId: string }>> {
    if (uses.length === 0) return Promise.resolve([]);
    return this.em.query(
      `SELECT p.id, p.mode, p.from_address AS "fromAddress", p.auth_nonce AS nonce, p.to_address AS "toAddress", h.organization_id AS "organizationId"
         FROM payments p JOIN payee_handles h ON h.handle = lower(p.to_handle) AND h.organization_id IS NOT NULL
        WHERE p.mode IN ('instant', 'a2a', 'x402') AND (lower(p.from_address), p.auth_nonce) IN (SELECT * FROM unnest($1::text[], $2::text[]))`,
      [uses.map((u) => u.authorizer.toLowerCase()), uses.map((u) => u.nonce.toLowerCase())],
    );
  }

  /**
   * Usage of agent `agentId` in its policy windows (agents' AgentUsageSource port: pending, submitted
   * and succeeded payments since `dayStart` / `monthStart`, and the open reservations not in
   * `settledNonces`, succeeded ones above `trustedBlock` included). Amounts in base units. In the
   * caller's transaction: run under the agent row lock when the answer decides a reservation.
   */
  async agentUsage(agentId: string, dayStart: Date, monthStart: Date, settledNonces: string[] = [], trustedBlock: number | null = null): Promise<AgentUsage> {
    const rows: Array<{ day: string; month: string; open: string }> = await this.em.query(
      `SELECT COALESCE(SUM(amount) FILTER (WHERE created_at >= $2), 0)::text AS day,
              COALESCE(SUM(amount) FILTER (WHERE created_at >= $3), 0)::text AS month,
              COALESCE(SUM(amount) FILTER (WHERE (status IN ('pending', 'submitted') OR (status = 'succeeded' AND used_block > $5::bigint))
                                             AND (auth_nonce IS NULL OR NOT auth_nonce = ANY($4::text[]))), 0)::text AS open
         FROM payments
        WHERE agent_id = $1 AND status IN ('pending', 'submitted', 'succeeded')`,
      [agentId, dayStart, monthStart, settledNonces, trustedBlock],
    );
    return { usedToday: BigInt(rows[0].day), usedThisMonth: BigInt(rows[0].month), open: BigInt(rows[0].open) };
  }

  /** usedAmount per mandate of `ids`: the sum of its pending, submitted and succeeded payments, in base units (docs/architecture.md §13); 0 when none. */
  async mandateUsedAmounts(ids: string[]): Promise<Map<string, bigint>> {
    const used = new Map<string, bigint>(ids.map((id) => [id, 0n]));
    if (ids.length === 0) return used;
    const rows: Array<{ mandate_id: string; used: string }> = await this.em.query(
      `SELECT mandate_id, SUM(amount)::text AS used FROM payments WHERE mandate_id = ANY($1::uuid[]) AND status IN ('pending', 'submitted', 'succeeded') GROUP BY mandate_id`,
      [ids],
    );
    for (const r of rows) used.set(r.mandate_id, BigInt(r.used));
    return used;
  }

  /** The payer of the first escrow-mode payment attached to checkout `checkoutId` (the agent's session signer), or null. */
  async escrowPayerOfCheckout(checkoutId: string): Promise<string | null> {
    const rows: Array<{ from_address: string }> = await this.em.query(
      `SELECT from_address FROM payments WHERE checkout_session_id = $1 AND mode = 'escrow' ORDER BY created_at LIMIT 1`,
      [checkoutId],
    );
    return rows[0]?.from_address ?? null;
  }

  /** Whether any payment is attached to checkout `checkoutId`. */
  async hasPaymentForCheckout(checkoutId: string): Promise<boolean> {
    const rows: unknown[] = await this.em.query(`SELECT 1 FROM payments WHERE checkout_session_id = $1 LIMIT 1`, [checkoutId]);
    return rows.length > 0;
  }

  findById(id: string): Promise<Payment | null> {
    return this.em.getRepository(Payment).findOneBy({ id });
  }

  /** The payment `id` paid to the payee handle `handle` (a receiving organisation's handle; DESIGN §21), or null. */
  findReceivedBy(id: string, handle: string): Promise<Payment | null> {
    return this.em.getRepository(Payment).findOneBy({ id, toHandle: handle });
  }

  /**
   * {@link findReceivedBy} locked FOR UPDATE until the caller's transaction ends (a refund's bound,
   * DESIGN §21): its status, amount (base units) and addresses. Must run in a transaction.
   */
  lockReceivedBy(id: string, handle: string): Promise<ReceivedMoney | null> {
    return lockReceivedRow(this.em, `SELECT id, status, amount, to_address AS payee, from_address AS payer FROM payments WHERE id = $1 AND to_handle = $2 FOR UPDATE`, id, handle);
  }


  async insert(p: Payment): Promise<void> {
    await this.em.getRepository(Payment).insert(p);
  }

  /**
   * Stores the signed authorization once (recovery point "signed"); false when the payment already
   * has one (a twin signed first) — the caller reloads and uses that one.
   */
  async storeAuthorization(id: string, auth: { nonce: string; validBefore: number; signature: string }): Promise<boolean> {
    const rows: unknown = await this.em.query(
      `UPDATE payments SET auth_nonce = $2, auth_valid_before = $3, auth_signature = $4, updated_at = now()
        WHERE id = $1 AND auth_nonce IS NULL AND status = 'pending' RETURNING id`,
      [id, auth.nonce, auth.validBefore, auth.signature],
    );
    return flat(rows as unknown[] | [unknown[], number]).length > 0;
  }

  /** Recovery point "broadcast": adds a relayer tx hash and moves pending → submitted. */
  /** A signed authorization handed to its holder, not relayed by us (x402 for another server): pending → submitted. */
  async markHanded(id: string): Promise<void> {
    await this.em.query(`UPDATE payments SET status = 'submitted', updated_at = now() WHERE id = $1 AND status = 'pending'`, [id]);
  }

  async markSubmitted(id: string, relayTxHash: string): Promise<void> {
    await this.em.query(
      `UPDATE payments SET relay_tx_hashes = array_append(relay_tx_hashes, $2),
              status = CASE WHEN status = 'pending' THEN 'submitted' ELSE status END, updated_at = now()
        WHERE id = $1 AND NOT ($2 = ANY(relay_tx_hashes))`,
      [id, relayTxHash],
    );
  }

  /** Links the payment to the checkout session an agent escrow created for it (same transaction as the insert). */
  async attachCheckout(id: string, checkoutSessionId: string): Promise<void> {
    await this.em.query(`UPDATE payments SET checkout_session_id = $2 WHERE id = $1`, [id, checkoutSessionId]);
  }

  /** Marks the payment touched (the sweep's idle clock) without changing it. */
  async touch(id: string): Promise<void> {
    await this.em.query(`UPDATE payments SET updated_at = now() WHERE id = $1`, [id]);
  }

  /**
   * Fails every reserved payment of `agentId` that is not signed yet (`reason`: agent_paused or
   * signer_disabled; docs/decisions.md "Agents and payments"), in the caller's transaction.
   */
  async failUnsignedForAgent(agentId: string, reason: 'agent_paused' | 'signer_disabled'): Promise<void> {
    await this.em.query(
      `UPDATE payments SET status = 'failed', failure_reason = $2, updated_at = now()
        WHERE agent_id = $1 AND status = 'pending' AND auth_nonce IS NULL`,
      [agentId, reason],
    );
  }

  /**
   * pending → failed with `reason` only while no authorization is stored: a signed payment may still
   * move on chain, so it is never failed this way (it settles, or fails once cancelled or expired;
   * docs/architecture.md §13, §18). Serialised with {@link storeAuthorization} by the row, so exactly one
   * of the two wins. @returns false when the payment was signed (or settled) first.
   */
  async failUnsigned(id: string, reason: string): Promise<boolean> {
    const rows: unknown = await this.em.query(
      `UPDATE payments SET status = 'failed', failure_reason = $2, updated_at = now()
        WHERE id = $1 AND status = 'pending' AND auth_nonce IS NULL RETURNING id`,
      [id, reason],
    );
    return flat(rows as unknown[] | [unknown[], number]).length > 0;
  }

  /** pending/submitted → failed with `reason` (the authorization is dead: expired unused); false when it had already settled. */
  async markFailed(id: string, reason: string): Promise<boolean> {
    const rows: unknown = await this.em.query(
      `UPDATE payments SET status = 'failed', failure_reason = $2, updated_at = now() WHERE id = $1 AND status IN ('pending', 'submitted') RETURNING id`,
      [id, reason],
    );
    return flat(rows as unknown[] | [unknown[], number]).length > 0;
  }

  /**
   * The authorization `nonce` of `authorizer` was used on chain by `txHash` in block `block`: its payment
   * succeeds (also from failed-by-expiry, since the chain says it moved), or, already succeeded, takes
   * the transaction and block the chain now shows (the same use re-mined after a reorg). Returns the
   * payment id when it was not succeeded before, else null.
   */
  async markUsed(authorizer: string, nonce: string, txHash: string, block: number): Promise<string | null> {
    const rows: Array<{ id: string; was: string }> | [Array<{ id: string; was: string }>, number] = await this.em.query(
      `UPDATE payments p SET status = 'succeeded', tx_hash = $3, used_block = $4, failure_reason = NULL, updated_at = now()
         FROM (SELECT id, status AS was FROM payments WHERE lower(from_address) = lower($1) AND auth_nonce = $2 FOR UPDATE) old
        WHERE p.id = old.id AND (p.status <> 'succeeded' OR p.used_block IS DISTINCT FROM $4 OR p.tx_hash IS DISTINCT FROM $3)
        RETURNING p.id, old.was`,
      [authorizer, nonce.toLowerCase(), txHash, block],
    );
    return flat(rows).find((r) => r.was !== 'succeeded')?.id ?? null;
  }

  /**
   * Reorg unwind (DESIGN §22; issue 29 finding 4): the payments recorded as used in blocks
   * `fromBlock`..`toBlock` (or above `fromBlock − 1` when `toBlock` is null) whose authorization the
   * chain's logs of that range no longer show used (`stillUsed`: `authorizer:nonce`, lower case) go back
   * to `submitted`, their transaction forgotten: they count against the float and the policy again and
   * are resumed (the relayer resends the reorged transaction; the sweep resumes the payment). Runs in
   * the indexer pass's transaction. @returns the ids taken back.
   */
  async unwindUses(fromBlock: number, toBlock: number, stillUsed: string[]): Promise<string[]> {
    const rows: Array<{ id: string }> | [Array<{ id: string }>, number] = await this.em.query(
      `UPDATE payments SET status = 'submitted', tx_hash = NULL, used_block = NULL, updated_at = now()
        WHERE status = 'succeeded' AND used_block BETWEEN $1 AND $2
          AND NOT (lower(from_address) || ':' || auth_nonce = ANY($3::text[])) RETURNING id`,
      [fromBlock, toBlock, stillUsed],
    );
    return flat(rows).map((r) => r.id);
  }

  /** The authorization was cancelled on chain: its payment fails (reason cancelled). */
  async markCanceled(authorizer: string, nonce: string): Promise<string | null> {
    const rows: Array<{ id: string }> | [Array<{ id: string }>, number] = await this.em.query(
      `UPDATE payments SET status = 'failed', failure_reason = 'cancelled', updated_at = now()
        WHERE lower(from_address) = lower($1) AND auth_nonce = $2 AND status IN ('pending', 'submitted') RETURNING id`,
      [authorizer, nonce.toLowerCase()],
    );
    return flat(rows)[0]?.id ?? null;
  }

  /** Payments idle in pending/submitted since before `idleBefore`, oldest first. */
  idle(idleBefore: Date, limit = 100): Promise<Payment[]> {
    return this.em
      .getRepository(Payment)
      .createQueryBuilder('p')
      .where(`p.status IN ('pending', 'submitted')`)
      .andWhere('p.updated_at < :idleBefore', { idleBefore })
      .orderBy('p.updated_at', 'ASC')
      .take(limit)
      .getMany();
  }

  /** An agent's payments newest first (keyset on created_at, id). */
  list(agentId: string, q: { limit: number; startingAfter?: string; status?: PaymentStatus; mode?: PaymentMode }): Promise<Payment[]> {
    return keysetPage(
      () => this.em.getRepository(Payment).createQueryBuilder('p'),
      'p',
      { sql: 'p.agent_id = :agentId', params: { agentId } },
      q.limit,
      q.startingAfter,
      (qb) => {
        if (q.status) qb.andWhere('p.status = :status', { status: q.status });
        if (q.mode) qb.andWhere('p.mode = :mode', { mode: q.mode });
      },
    );
  }

  /** Adds `delta` base units (negative after a reorg) to the row's `refunded_units`, in the caller's transaction (refunds, DESIGN §21). */
  async addRefunded(id: string, delta: bigint): Promise<void> {
    await this.em.query(`UPDATE payments SET refunded_units = refunded_units + $2 WHERE id = $1`, [id, delta.toString()]);
  }

  /** The row's `refunded_units` (base units; 0 when there is no such row). */
  async refundedUnits(id: string): Promise<bigint> {
    const rows = (await this.em.query(`SELECT refunded_units::text AS r FROM payments WHERE id = $1`, [id])) as Array<{ r: string }>;
    return rows[0] ? BigInt(rows[0].r) : 0n;
  }
}

/** TypeORM returns `[rows, count]` for UPDATE … RETURNING on pg; plain rows elsewhere. */
function flat<T>(rows: T[] | [T[], number]): T[] {
  return rows.length === 2 && Array.isArray(rows[0]) && typeof rows[1] === 'number' ? (rows[0] as T[]) : (rows as T[]);
}
