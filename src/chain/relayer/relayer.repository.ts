import { Injectable } from '@nestjs/common';
import { currentTraceparent } from '../../common/tracing/trace-context';
import { TransactionHost, TxHost } from '../../database/transaction';

/** A relayer_transactions row. `nonce` is null until allocated; `data` is 0x calldata. */
export interface RelayTxRow {
  id: string;
  address: string;
  nonce: number | null;
  toAddress: string;
  data: string;
  purpose: string;
  reference: string | null;
  txHash: string | null;
  /** The signed transaction (recovery point "signed"), kept until it is broadcast. */
  rawTx: string | null;
  status: 'queued' | 'broadcast' | 'failed';
  error: string | null;
  /** Every hash signed for this row's nonce, oldest first (first send, fee bumps, re-signs); DESIGN §18. */
  txHashes: string[];
  /** The hash that was mined, once the tender saw its receipt. */
  minedTxHash: string | null;
  minedBlock: number | null;
  /** When the current signed bytes were last sent (the bump clock). */
  sentAt: Date | null;
  replacements: number;
  /** The 0-value self-transfer row that fills this nonce after the payload died while dropped. */
  filledBy: string | null;
}

/**
 * Postgres I/O of relayer transactions and nonces (docs/architecture.md §5); runs in the caller's
 * transaction. Raw SQL on purpose: nonces are allocated under a row lock, and signed hashes are
 * appended to a row's history in the same statement that records the send.
 */
@Injectable()
export class RelayerRepository {
  constructor(private readonly txHost: TransactionHost) {}

  private get em() {
    return (this.txHost as TxHost).tx;
  }

  /**
   * The `traceparent` each of `txHashes` was queued under by our relayer (DESIGN §20: the request
   * that submitted it), keyed by lower-case hash; hashes we did not send, or sent untraced, are absent.
   */
  async relayTraceparents(txHashes: string[]): Promise<Map<string, string>> {
    if (txHashes.length === 0) return new Map();
    const rows: Array<{ tx_hash: string; traceparent: string }> = await this.em.query(
      `SELECT tx_hash, traceparent FROM relayer_transactions WHERE tx_hash = ANY($1::text[]) AND traceparent IS NOT NULL`,
      [[...new Set(txHashes.map((h) => h.toLowerCase()))]],
    );
    return new Map(rows.map((r) => [r.tx_hash.toLowerCase(), r.traceparent]));
  }

  /** Inserts a queued row with the `traceparent` of the request that queued it (DESIGN §20; null when untraced). */
  async insert(row: Pick<RelayTxRow, 'id' | 'address' | 'toAddress' | 'data' | 'purpose' | 'reference'>): Promise<void> {
    await this.em.query(
      `INSERT INTO relayer_transactions (id, address, to_address, data, purpose, reference, status, traceparent) VALUES ($1, $2, $3, $4, $5, $6, 'queued', $7)`,
      [row.id, row.address.toLowerCase(), row.toAddress, row.data, row.purpose, row.reference, currentTraceparent()],
    );
  }

  /**
   * Inserts a queued row unless its intent (`purpose`, `reference`) already has a live row (status not
   * failed): the partial unique index relayer_transactions_live_intent decides, so concurrent twins
   * insert once (DESIGN §22 "One live relay per intent").
   * @returns true when this row was inserted, false when a live row of the intent exists.
   */
  async insertUnlessLive(row: Pick<RelayTxRow, 'id' | 'address' | 'toAddress' | 'data' | 'purpose' | 'reference'>): Promise<boolean> {
    const rows: Array<{ id: string }> = await this.em.query(
      `INSERT INTO relayer_transactions (id, address, to_address, data, purpose, reference, status, traceparent) VALUES ($1, $2, $3, $4, $5, $6, 'queued', $7)
       ON CONFLICT (purpose, reference) WHERE status <> 'failed' AND reference IS NOT NULL DO NOTHING RETURNING id`,
      [row.id, row.address.toLowerCase(), row.toAddress, row.data, row.purpose, row.reference, currentTraceparent()],
    );
    return rows.length === 1;
  }

  /** The live row (status not failed) of the intent (`purpose`, `reference`), or null (DESIGN §22). */
  async live(purpose: string, reference: string): Promise<RelayTxRow | null> {
    const rows: Array<Record<string, unknown>> = await this.em.query(
      `SELECT * FROM relayer_transactions WHERE purpose = $1 AND reference = $2 AND status <> 'failed' LIMIT 1`,
      [purpose, reference],
    );
    return rows[0] ? toRow(rows[0]) : null;
  }

  async find(id: string): Promise<RelayTxRow | null> {
    const rows: Array<Record<string, unknown>> = await this.em.query(`SELECT * FROM relayer_transactions WHERE id = $1`, [id]);
    return rows[0] ? toRow(rows[0]) : null;
  }

  /**
   * Queued rows of `address` not touched for `idleMs` (their send was refused for fees or gas money, or
   * their job ended without a broadcast), oldest first (at most `limit`): what the tender sends (DESIGN §22).
   */
  async stalledQueued(address: string, idleMs: number, limit = 20): Promise<RelayTxRow[]> {
    const rows: Array<Record<string, unknown>> = await this.em.query(
      `SELECT * FROM relayer_transactions WHERE address = $1 AND status = 'queued' AND updated_at < now() - make_interval(secs => $2::float8 / 1000)
        ORDER BY created_at, id LIMIT $3`,
      [address.toLowerCase(), idleMs, limit],
    );
    return rows.map(toRow);
  }

  /** Broadcast rows of `address` whose mined hash is not known yet, lowest nonce first (at most `limit`). */
  async unmined(address: string, limit = 100): Promise<RelayTxRow[]> {
    const rows: Array<Record<string, unknown>> = await this.em.query(
      `SELECT * FROM relayer_transactions WHERE address = $1 AND status = 'broadcast' AND mined_tx_hash IS NULL AND nonce IS NOT NULL
        ORDER BY nonce, created_at LIMIT $2`,
      [address.toLowerCase(), limit],
    );
    return rows.map(toRow);
  }

  /**
   * Broadcast rows of `address` recorded as mined in a block above `afterBlock` (not final yet: a reorg
   * may still remove that block; DESIGN §18), newest block first (at most `limit`).
   */
  async minedAfter(address: string, afterBlock: number, limit = 500): Promise<RelayTxRow[]> {
    const rows: Array<Record<string, unknown>> = await this.em.query(
      `SELECT * FROM relayer_transactions WHERE address = $1 AND status = 'broadcast' AND mined_tx_hash IS NOT NULL AND mined_block > $2
        ORDER BY mined_block DESC, nonce DESC LIMIT $3`,
      [address.toLowerCase(), afterBlock, limit],
    );
    return rows.map(toRow);
  }

  /** The block that held the row's mined hash is no longer on the chain (a reorg): the row is unmined again. */
  async markUnmined(id: string): Promise<void> {
    await this.em.query(`UPDATE relayer_transactions SET mined_tx_hash = NULL, mined_block = NULL, updated_at = now() WHERE id = $1`, [id]);
  }

  /**
   * Every hash signed for the rows of `reference` with one of `purposes` (first sends, fee bumps,
   * re-signs; DESIGN §18), oldest row first, each row's hashes oldest first, without duplicates.
   */
  async hashesFor(reference: string, purposes: readonly string[]): Promise<string[]> {
    const rows: Array<{ tx_hashes: string[] | null }> = await this.em.query(
      `SELECT tx_hashes FROM relayer_transactions WHERE reference = $1 AND purpose = ANY($2::text[]) ORDER BY created_at, id`,
      [reference, [...purposes]],
    );
    return [...new Set(rows.flatMap((r) => r.tx_hashes ?? []))];
  }

  /** The row's hash `txHash` was mined in `block`. */
  async markMined(id: string, txHash: string, block: number): Promise<void> {
    await this.em.query(`UPDATE relayer_transactions SET mined_tx_hash = $2, mined_block = $3, updated_at = now() WHERE id = $1`, [id, txHash, block]);
  }

  /**
   * A replacement (same nonce, new fees) signed: it becomes the row's current bytes and joins `tx_hashes`,
   * committed before the broadcast so a crash cannot lose a hash that may be mined.
   */
  async markReplaced(id: string, txHash: string, rawTx: string): Promise<void> {
    await this.em.query(
      `UPDATE relayer_transactions SET tx_hash = $2, raw_tx = $3, tx_hashes = array_append(tx_hashes, $2), sent_at = now(),
              replacements = replacements + 1, updated_at = now() WHERE id = $1`,
      [id, txHash, rawTx],
    );
  }

  /** A replacement the node refused: the previous bytes stay current (the refused hash stays listed, it was signed). */
  async restoreCurrent(id: string, txHash: string, rawTx: string): Promise<void> {
    await this.em.query(`UPDATE relayer_transactions SET tx_hash = $2, raw_tx = $3, updated_at = now() WHERE id = $1`, [id, txHash, rawTx]);
  }

  /** The current bytes were sent again (a dropped transaction resent): restarts the bump clock. */
  async touchSent(id: string): Promise<void> {
    await this.em.query(`UPDATE relayer_transactions SET sent_at = now(), updated_at = now() WHERE id = $1`, [id]);
  }

  /**
   * Records the 0-value self-transfer that fills `row`'s nonce (its payload died while dropped): a
   * broadcast row of its own, signed bytes included, linked from `row.filled_by`. Call in a transaction.
   */
  async insertFill(row: RelayTxRow, fillId: string, txHash: string, rawTx: string): Promise<void> {
    await this.em.query(
      `INSERT INTO relayer_transactions (id, address, nonce, to_address, data, purpose, reference, tx_hash, raw_tx, tx_hashes, sent_at, status)
       VALUES ($1, $2, $3, $2, '0x', 'nonce-fill', $4, $5, $6, ARRAY[$5], now(), 'broadcast')`,
      [fillId, row.address, row.nonce, row.id, txHash, rawTx],
    );
    await this.em.query(`UPDATE relayer_transactions SET filled_by = $2, updated_at = now() WHERE id = $1`, [row.id, fillId]);
  }

  /** Oldest send (age in seconds) among rows not known to be mined: the reconciliation's "gap older than the bump time". */
  async oldestUnminedAgeSeconds(address: string): Promise<number | null> {
    const rows: Array<{ age: string | null }> = await this.em.query(
      `SELECT EXTRACT(EPOCH FROM now() - min(sent_at))::text AS age FROM relayer_transactions WHERE address = $1 AND status = 'broadcast' AND mined_tx_hash IS NULL`,
      [address.toLowerCase()],
    );
    return rows[0]?.age ? Number(rows[0].age) : null;
  }

  /** The stored next nonce of `address` (null before its first send) and the hash last sent with `nonce`, if any. */
  async peek(address: string, nonce: number): Promise<{ next: number | null; txHashAtNonce: string | null }> {
    const a = address.toLowerCase();
    const rows: Array<{ next_nonce: string }> = await this.em.query(`SELECT next_nonce FROM relayer_nonces WHERE address = $1`, [a]);
    const sent: Array<{ tx_hash: string }> = await this.em.query(
      `SELECT tx_hash FROM relayer_transactions WHERE address = $1 AND nonce = $2 AND tx_hash IS NOT NULL ORDER BY created_at DESC LIMIT 1`,
      [a, nonce],
    );
    return { next: rows[0] ? Number(rows[0].next_nonce) : null, txHashAtNonce: sent[0]?.tx_hash ?? null };
  }

  /**
   * Allocates the next nonce of `address` under its row lock: max(stored next nonce, `chainPending`),
   * so sends outside the queue (or a fresh database) never reuse a mined nonce; with `resetTo`, that
   * nonce (the node has never seen the transactions stored above it: dropped, or a reset local chain),
   * so a gap cannot block the key. Call in a transaction.
   */
  async allocateNonce(address: string, chainPending: number, resetTo?: number): Promise<number> {
    const a = address.toLowerCase();
    await this.em.query(`INSERT INTO relayer_nonces (address, next_nonce) VALUES ($1, $2) ON CONFLICT (address) DO NOTHING`, [a, chainPending]);
    const rows: Array<{ next_nonce: string }> = await this.em.query(`SELECT next_nonce FROM relayer_nonces WHERE address = $1 FOR UPDATE`, [a]);
    const nonce = resetTo ?? Math.max(Number(rows[0].next_nonce), chainPending);
    await this.em.query(`UPDATE relayer_nonces SET next_nonce = $2 WHERE address = $1`, [a, nonce + 1]);
    return nonce;
  }

  /** Gives `nonce` back when it is still the last one handed out (a broadcast the node refused). */
  async releaseNonce(address: string, nonce: number): Promise<void> {
    await this.em.query(`UPDATE relayer_nonces SET next_nonce = $2 WHERE address = $1 AND next_nonce = $3`, [address.toLowerCase(), nonce, nonce + 1]);
  }

  /** Recovery point "signed": the nonce, the hash and the signed bytes, committed before the broadcast. */
  async markSigned(id: string, nonce: number, txHash: string, rawTx: string): Promise<void> {
    await this.em.query(
      `UPDATE relayer_transactions SET nonce = $2, tx_hash = $3, raw_tx = $4, tx_hashes = array_append(tx_hashes, $3), sent_at = now(), updated_at = now() WHERE id = $1`,
      [id, nonce, txHash, rawTx],
    );
  }

  /** Forgets a signed transaction the node will never take (its nonce was used by another): the next send signs anew. */
  async clearSigned(id: string): Promise<void> {
    await this.em.query(`UPDATE relayer_transactions SET nonce = NULL, tx_hash = NULL, raw_tx = NULL, updated_at = now() WHERE id = $1`, [id]);
  }

  async markBroadcast(id: string): Promise<void> {
    await this.em.query(`UPDATE relayer_transactions SET status = 'broadcast', updated_at = now() WHERE id = $1`, [id]);
  }

  /** The rows relaying one caller's record (`purpose`, `reference`), newest first. */
  async forReference(purpose: string, reference: string): Promise<Array<{ id: string; status: RelayTxRow['status'] }>> {
    return this.em.query(`SELECT id, status FROM relayer_transactions WHERE reference = $1 AND purpose = $2 ORDER BY created_at DESC`, [reference, purpose]);
  }

  /** Every hash signed by the rows of one caller's record (`purpose`, `reference`): each row's history and its current hash, once each. */
  async hashesForReference(purpose: string, reference: string): Promise<string[]> {
    const rows: Array<{ tx_hash: string }> = await this.em.query(
      `SELECT DISTINCT unnest(tx_hashes || CASE WHEN tx_hash IS NULL THEN '{}'::text[] ELSE ARRAY[tx_hash] END) AS tx_hash
         FROM relayer_transactions WHERE reference = $1 AND purpose = $2`,
      [reference, purpose],
    );
    return rows.map((r) => r.tx_hash);
  }

  async markFailed(id: string, error: string): Promise<void> {
    await this.em.query(`UPDATE relayer_transactions SET status = 'failed', error = $2, updated_at = now() WHERE id = $1`, [id, error.slice(0, 500)]);
  }
}

function toRow(r: Record<string, unknown>): RelayTxRow {
  return {
    id: r.id as string,
    address: r.address as string,
    nonce: r.nonce === null ? null : Number(r.nonce),
    toAddress: r.to_address as string,
    data: r.data as string,
    purpose: r.purpose as string,
    reference: r.reference as string | null,
    txHash: r.tx_hash as string | null,
    rawTx: (r.raw_tx as string | null) ?? null,
    status: r.status as RelayTxRow['status'],
    error: r.error as string | null,
    txHashes: (r.tx_hashes as string[] | null) ?? [],
    minedTxHash: (r.mined_tx_hash as string | null) ?? null,
    minedBlock: r.mined_block === null || r.mined_block === undefined ? null : Number(r.mined_block),
    sentAt: (r.sent_at as Date | null) ?? null,
    replacements: Number(r.replacements ?? 0),
    filledBy: (r.filled_by as string | null) ?? null,
  };
}
