import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { TransactionHost, TxHost } from '../../database/transaction';

/** Escrow statuses whose amount the contract still holds (DESIGN §18). */
export const HELD = ['funded', 'accepted', 'delivered', 'disputed'] as const;

/** An escrow row as reconciliation checks it; `amount_units` in USDC base units (decimal digits). */
export interface EscrowRecord {
  id: string;
  escrow_key: string;
  status: string;
  amount_units: string;
}

/** A terminal payment as reconciliation checks it; `amount` in base units, `cursor` its place in the batch order. */
export interface TerminalPayment {
  id: string;
  status: string;
  from_address: string;
  auth_nonce: string;
  to_address: string;
  amount: string;
  tx_hash: string | null;
  mode: string;
  cursor: string;
}

/** A batch cursor ('<updated_at as text>|<id>', or null from the start) as query parameters. */
function cursorParts(after: string | null): [string, string] {
  if (!after) return ['-infinity', '00000000-0000-0000-0000-000000000000'];
  const bar = after.lastIndexOf('|');
  return [after.slice(0, bar), after.slice(bar + 1)];
}

/** The tables read in (updated_at, id) batches, each with its (updated_at, id) index (issue 33). */
type WindowTable = 'escrows' | 'payments' | 'x402_settlements';

/**
 * One keyset batch of `table`: the rows matching `filter` (constant SQL, no parameters; null for
 * none) changed within `days`, in (updated_at, id) order after `after` (null: from the start of the
 * window), at most `limit`, each with `cursor`, its place to pass back as `after`. The window's start
 * and the cursor are ONE row-value lower bound: as separate conditions on updated_at the planner
 * multiplied their selectivities, expected a handful of rows and sorted the whole window instead of
 * reading the index in order (issue 33). A row updated again moves ahead of the cursor and is read again.
 */
function windowBatch(table: WindowTable, columns: string, filter: string | null, days: number, after: string | null, limit: number): [string, unknown[]] {
  const [at, id] = cursorParts(after);
  return [
    `SELECT ${columns}, updated_at::text || '|' || id AS cursor FROM ${table}
      WHERE ${filter ? `${filter} AND ` : ''}(updated_at, id) > (GREATEST($2::timestamptz, now() - make_interval(days => $1)), $3::uuid)
      ORDER BY updated_at, id LIMIT $4`,
    [days, at, id, limit],
  ];
}

/**
 * Reconciliation's reads of the ledger (DESIGN §18; docs/architecture.md, Conventions 4: all SQL in
 * repositories). Each runs on its own pooled connection, in no transaction: a pass reads the ledger
 * first, then the chain, and never holds a transaction across a network call.
 */
@Injectable()
export class ReconciliationRepository {
  constructor(
    private readonly dataSource: DataSource,
    private readonly txHost: TransactionHost,
  ) {}

  /**
   * One batch of the held escrows (their amount is in the contract), in id order after `afterId`
   * ('' from the start), at most `limit`: a range scan of `escrows_held_idx` (issue 33: a pass is a
   * bounded batch from a cursor).
   */
  heldEscrows(afterId: string, limit: number): Promise<EscrowRecord[]> {
    return this.dataSource.query(
      `SELECT id, escrow_key, status, amount_units FROM escrows
        WHERE status = ANY($1) AND ($2 = '' OR id > $2::uuid)
        ORDER BY id LIMIT $3`,
      [HELD, afterId, limit],
    );
  }

  /**
   * One batch of the escrows changed within `days` (any status: a release or refund of the last days
   * is checked against the contract's state), in (updated_at, id) order after `after` (null: from the
   * start of the window), at most `limit`: a range scan of `escrows_recent_idx` (updated_at, id), whose
   * reads stop at the batch. Held and changed escrows were one `OR` before, a bitmap of every row matching either
   * side sorted by id: a batch read grew with the escrows changed in the window (7.8× from 10k to 1M
   * rows, issue 33). A held escrow changed recently is in both batches; the caller checks it once.
   * `cursor` is the row's place, to pass back as `after`.
   */
  recentEscrows(days: number, after: string | null, limit: number): Promise<Array<EscrowRecord & { cursor: string }>> {
    return this.dataSource.query(...windowBatch('escrows', 'id, escrow_key, status, amount_units', null, days, after, limit));
  }

  /**
   * One batch of the agent payments with an EIP-3009 authorization that ended (succeeded or failed)
   * within `days`, in (updated_at, id) order after `after` (null: from the start of the window), at
   * most `limit` (issue 33: a pass is a bounded batch from a cursor; a range scan of
   * `payments_reconcile_idx`, {@link windowBatch}). `amount` in base units; `cursor` is the row's
   * place, to pass back as `after`.
   */
  terminalPayments(days: number, after: string | null, limit: number): Promise<Array<TerminalPayment>> {
    return this.dataSource.query(
      ...windowBatch('payments', 'id, status, from_address, auth_nonce, to_address, amount::text, tx_hash, mode', "status IN ('succeeded', 'failed') AND auth_nonce IS NOT NULL", days, after, limit),
    );
  }

  /**
   * One batch of the x402 settlements that ended within `days`, as {@link terminalPayments}
   * (`x402_settlements_reconcile_idx`), followed by at most `limit` of those answered 200 but open
   * again (a reorg took their transfer off the chain, DESIGN §22: reported until the transfer is
   * mined again; read on every pass, `cursor` null).
   */
  async terminalSettlements(days: number, after: string | null, limit: number): Promise<Array<{ id: string; status: string; payer: string; nonce: string; cursor: string | null }>> {
    const [ended, reopened] = await Promise.all([
      this.dataSource.query(...windowBatch('x402_settlements', 'id, status, payer, nonce', "status IN ('settled', 'succeeded', 'failed')", days, after, limit)) as Promise<Array<{ id: string; status: string; payer: string; nonce: string; cursor: string }>>,
      this.dataSource.query(
        `SELECT id, status, payer, nonce, NULL AS cursor FROM x402_settlements
          WHERE status IN ('pending', 'reserved') AND answered_at IS NOT NULL ORDER BY updated_at LIMIT $1`,
        [limit],
      ) as Promise<Array<{ id: string; status: string; payer: string; nonce: string; cursor: null }>>,
    ]);
    return [...ended, ...reopened];
  }

  /** Each relayer address's next nonce as allocated in Postgres (docs/architecture.md §5). */
  relayerNonces(): Promise<Array<{ address: string; next_nonce: string }>> {
    return this.dataSource.query(`SELECT address, next_nonce FROM relayer_nonces`);
  }

  /** Sum of the held escrows' amounts (base units) and how many there are: one aggregate query. */
  async heldSum(): Promise<{ sum: bigint; count: number }> {
    const rows: Array<{ sum: string | null; n: number }> = await this.dataSource.query(`SELECT sum(amount_units)::text AS sum, count(*)::int AS n FROM escrows WHERE status = ANY($1)`, [HELD]);
    return { sum: BigInt(rows[0].sum ?? '0'), count: rows[0].n };
  }

  /**
   * Payments (`payment`) and x402 settlements (`x402`) still pending or submitted whose authorization
   * expired before chain time `before` (unix seconds): the sweep should have decided them (issue 30).
   */
  stalePending(before: number, limit = 100): Promise<Array<{ id: string; source: 'payment' | 'x402'; status: string; valid_before: string }>> {
    return this.dataSource.query(
      `(SELECT id, 'payment' AS source, status, auth_valid_before::text AS valid_before FROM payments
         WHERE status IN ('pending', 'submitted') AND auth_valid_before < $1 ORDER BY auth_valid_before LIMIT $2)
       UNION ALL
       (SELECT id, 'x402' AS source, status, valid_before::text FROM x402_settlements
         WHERE status IN ('pending', 'reserved') AND valid_before < $1 ORDER BY valid_before LIMIT $2)`,
      [before, limit],
    );
  }

  /** Records AuthorizationCanceled logs read by reconciliation (lower case); in the caller's transaction (with the cursor). */
  async recordCancellations(rows: Array<{ authorizer: string; nonce: string; blockNumber: number; txHash: string }>): Promise<void> {
    if (rows.length === 0) return;
    await (this.txHost as TxHost).tx.query(
      `INSERT INTO reconcile_cancellations (authorizer, nonce, block_number, tx_hash)
       SELECT lower(a), lower(n), b, t FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[]) AS x(a, n, b, t)
       ON CONFLICT (authorizer, nonce) DO NOTHING`,
      [rows.map((r) => r.authorizer), rows.map((r) => r.nonce), rows.map((r) => r.blockNumber), rows.map((r) => r.txHash)],
    );
  }

  /** Which of `keys` (`authorizer:nonce`, any case) reconciliation has seen cancelled at or below `block`. */
  async cancelled(keys: string[], block: number): Promise<Set<string>> {
    if (keys.length === 0) return new Set();
    const rows: Array<{ k: string }> = await this.dataSource.query(
      `SELECT authorizer || ':' || nonce AS k FROM reconcile_cancellations WHERE authorizer || ':' || nonce = ANY($1::text[]) AND block_number <= $2`,
      [keys.map((k) => k.toLowerCase()), block],
    );
    return new Set(rows.map((r) => r.k));
  }

  /** The newest relayer transaction row for (`address`, `nonce`) and its age in seconds, or undefined. */
  async relayerTransactionAt(address: string, nonce: number): Promise<{ id: string; age_s: number } | undefined> {
    const rows: Array<{ id: string; age_s: number }> = await this.dataSource.query(
      `SELECT id, extract(epoch FROM now() - updated_at)::float8 AS age_s FROM relayer_transactions WHERE address = $1 AND nonce = $2 ORDER BY updated_at DESC LIMIT 1`,
      [address, nonce],
    );
    return rows[0];
  }
}
