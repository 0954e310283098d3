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
}

/** Postgres I/O of relayer transactions and nonces (docs/architecture.md §5); runs in the caller's transaction. */
@Injectable()
export class RelayerRepository {
  constructor(private readonly txHost: TransactionHost) {}

  private get em() {
    return (this.txHost as TxHost).tx;
  }

  /** Inserts a queued row with the `traceparent` of the request that queued it (DESIGN §20; null when untraced). */
  async insert(row: Pick<RelayTxRow, 'id' | 'address' | 'toAddress' | 'data' | 'purpose' | 'reference'>): Promise<void> {
    await this.em.query(
      `INSERT INTO relayer_transactions (id, address, to_address, data, purpose, reference, status, traceparent) VALUES ($1, $2, $3, $4, $5, $6, 'queued', $7)`,
      [row.id, row.address.toLowerCase(), row.toAddress, row.data, row.purpose, row.reference, currentTraceparent()],
    );
  }

  async find(id: string): Promise<RelayTxRow | null> {
    const rows: Array<Record<string, unknown>> = await this.em.query(`SELECT * FROM relayer_transactions WHERE id = $1`, [id]);
    const r = rows[0];
    if (!r) return null;
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
    };
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
    await this.em.query(`UPDATE relayer_transactions SET nonce = $2, tx_hash = $3, raw_tx = $4, updated_at = now() WHERE id = $1`, [id, nonce, txHash, rawTx]);
  }

  /** Forgets a signed transaction the node will never take (its nonce was used by another): the next send signs anew. */
  async clearSigned(id: string): Promise<void> {
    await this.em.query(`UPDATE relayer_transactions SET nonce = NULL, tx_hash = NULL, raw_tx = NULL, updated_at = now() WHERE id = $1`, [id]);
  }

  async markBroadcast(id: string): Promise<void> {
    await this.em.query(`UPDATE relayer_transactions SET status = 'broadcast', updated_at = now() WHERE id = $1`, [id]);
  }

  async markFailed(id: string, error: string): Promise<void> {
    await this.em.query(`UPDATE relayer_transactions SET status = 'failed', error = $2, updated_at = now() WHERE id = $1`, [id, error.slice(0, 500)]);
  }
}
