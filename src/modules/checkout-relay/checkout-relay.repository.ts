import { Injectable } from '@nestjs/common';
import { TransactionHost, TxHost } from '../../database/transaction';

/** One relayed buyer authorization (table checkout_relays). `buyer` is lower case; amounts are unix seconds. */
export interface CheckoutRelayRow {
  id: string;
  checkoutSessionId: string;
  buyer: string;
  nonce: string;
  status: 'reserved' | 'broadcast' | 'failed';
  relayTxId: string | null;
  txHash: string | null;
  error: string | null;
  updatedAt: Date;
}

/** A buyer's EIP-3009 authorization as stored with its relay (validity in unix seconds). */
export interface StoredAuthorization {
  validAfter: bigint;
  validBefore: bigint;
  signature: string;
}

const COLUMNS = `id, checkout_session_id, buyer, nonce, status, relay_tx_id, tx_hash, error, updated_at`;

function toRow(r: Record<string, unknown>): CheckoutRelayRow {
  return {
    id: r.id as string,
    checkoutSessionId: r.checkout_session_id as string,
    buyer: r.buyer as string,
    nonce: r.nonce as string,
    status: r.status as CheckoutRelayRow['status'],
    relayTxId: (r.relay_tx_id as string | null) ?? null,
    txHash: (r.tx_hash as string | null) ?? null,
    error: (r.error as string | null) ?? null,
    updatedAt: r.updated_at as Date,
  };
}

/** Raw SQL over checkout_relays (docs/architecture.md §16); each call is its own short statement. */
@Injectable()
export class CheckoutRelayRepository {
  constructor(private readonly txHost: TransactionHost) {}

  private get em() {
    return (this.txHost as TxHost).tx;
  }

  async find(buyer: string, nonce: string): Promise<CheckoutRelayRow | null> {
    const rows: Array<Record<string, unknown>> = await this.em.query(`SELECT ${COLUMNS} FROM checkout_relays WHERE buyer = $1 AND nonce = $2`, [
      buyer.toLowerCase(),
      nonce.toLowerCase(),
    ]);
    return rows.length ? toRow(rows[0]) : null;
  }

  /**
   * Reserves (buyer, nonce) for a checkout: the recovery point "reserved".
   * @returns true when this call created the row, false when it already existed (a twin).
   */
  async reserve(row: { id: string; checkoutSessionId: string; buyer: string; nonce: string; validAfter: bigint; validBefore: bigint; signature: string }): Promise<boolean> {
    const rows: unknown[] = await this.em.query(
      `INSERT INTO checkout_relays (id, checkout_session_id, buyer, nonce, valid_after, valid_before, signature, status)
       VALUES ($1, $2, $3, $4, $5, $6, $7, 'reserved') ON CONFLICT (buyer, nonce) DO NOTHING RETURNING id`,
      [row.id, row.checkoutSessionId, row.buyer.toLowerCase(), row.nonce.toLowerCase(), row.validAfter.toString(), row.validBefore.toString(), row.signature],
    );
    return rows.length === 1;
  }

  /**
   * Takes over a reservation left behind (its process died before handing it to the relayer queue):
   * only a row still `reserved`, with no relayer row, untouched for `staleSeconds`. One caller wins.
   * `auth` is the taker's authorization, fully re-validated by the caller before this call (§18).
   */
  async claimStale(id: string, staleSeconds: number, auth: StoredAuthorization): Promise<boolean> {
    const rows: unknown[] = await this.em.query(
      `WITH claimed AS (
         UPDATE checkout_relays SET valid_after = $3, valid_before = $4, signature = $5, updated_at = now() WHERE id = $1 AND status = 'reserved' AND relay_tx_id IS NULL
            AND updated_at < now() - make_interval(secs => $2) RETURNING id)
       SELECT id FROM claimed`,
      [id, staleSeconds, auth.validAfter.toString(), auth.validBefore.toString(), auth.signature],
    );
    return rows.length === 1;
  }

  /**
   * Takes over a `failed` row of the same (buyer, nonce) for a request the caller has fully
   * re-validated (docs/architecture.md §18): back to `reserved` with the new authorization. One caller wins.
   */
  async takeOverFailed(id: string, auth: StoredAuthorization): Promise<boolean> {
    const rows: unknown[] = await this.em.query(
      `WITH claimed AS (
         UPDATE checkout_relays SET status = 'reserved', relay_tx_id = NULL, tx_hash = NULL, error = NULL, valid_after = $2, valid_before = $3, signature = $4, updated_at = now()
          WHERE id = $1 AND status = 'failed' RETURNING id)
       SELECT id FROM claimed`,
      [id, auth.validAfter.toString(), auth.validBefore.toString(), auth.signature],
    );
    return rows.length === 1;
  }

  /** Takes back a `broadcast` row whose transaction `txHash` the node no longer knows, to send it again. One caller wins. */
  async reclaimDropped(id: string, txHash: string): Promise<boolean> {
    const rows: unknown[] = await this.em.query(
      `WITH claimed AS (
         UPDATE checkout_relays SET status = 'reserved', relay_tx_id = NULL, tx_hash = NULL, updated_at = now()
          WHERE id = $1 AND status = 'broadcast' AND tx_hash = $2 RETURNING id)
       SELECT id FROM claimed`,
      [id, txHash.toLowerCase()],
    );
    return rows.length === 1;
  }

  /** The buyer's stored authorization of a relay (unix seconds and the 65-byte signature). */
  async storedAuthorization(id: string): Promise<StoredAuthorization> {
    const rows: Array<{ valid_after: string; valid_before: string; signature: string }> = await this.em.query(
      `SELECT valid_after::text, valid_before::text, signature FROM checkout_relays WHERE id = $1`,
      [id],
    );
    return { validAfter: BigInt(rows[0].valid_after), validBefore: BigInt(rows[0].valid_before), signature: rows[0].signature };
  }

  async markQueued(id: string, relayTxId: string): Promise<void> {
    await this.em.query(`UPDATE checkout_relays SET relay_tx_id = $2, updated_at = now() WHERE id = $1`, [id, relayTxId]);
  }

  async markBroadcast(id: string, relayTxId: string, txHash: string): Promise<void> {
    await this.em.query(`UPDATE checkout_relays SET status = 'broadcast', relay_tx_id = $2, tx_hash = $3, updated_at = now() WHERE id = $1`, [id, relayTxId, txHash.toLowerCase()]);
  }

  async markFailed(id: string, error: string): Promise<void> {
    await this.em.query(`UPDATE checkout_relays SET status = 'failed', error = $2, updated_at = now() WHERE id = $1`, [id, error.slice(0, 500)]);
  }

  /** How many relays a checkout has (tests and operators). */
  async countForCheckout(checkoutSessionId: string): Promise<number> {
    const rows: Array<{ n: number }> = await this.em.query(`SELECT count(*)::int AS n FROM checkout_relays WHERE checkout_session_id = $1`, [checkoutSessionId]);
    return rows[0].n;
  }
}
