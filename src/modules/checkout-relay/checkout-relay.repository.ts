import { Injectable } from '@nestjs/common';
import { TransactionHost, TxHost } from '../../database/transaction';
import { CheckoutRelay } from './checkout-relay.entity';

/** One relayed buyer authorization (table checkout_relays), as the repository maps it. */
export type CheckoutRelayRow = CheckoutRelay;

/** A buyer's EIP-3009 authorization as stored with its relay (validity in unix seconds). */
export interface StoredAuthorization {
  validAfter: bigint;
  validBefore: bigint;
  signature: string;
}

/**
 * Postgres I/O of checkout_relays (docs/architecture.md §16, §18); each call is its own short
 * statement. Every take-over is one conditional UPDATE whose affected count says which caller won.
 */
@Injectable()
export class CheckoutRelayRepository {
  constructor(private readonly txHost: TransactionHost) {}

  private get em() {
    return (this.txHost as TxHost).tx;
  }

  private get repo() {
    return this.em.getRepository(CheckoutRelay);
  }

  find(buyer: string, nonce: string): Promise<CheckoutRelayRow | null> {
    return this.repo.findOneBy({ buyer: buyer.toLowerCase(), nonce: nonce.toLowerCase() });
  }

  /**
   * Reserves (buyer, nonce) for a checkout: the recovery point "reserved". Raw on purpose:
   * `ON CONFLICT DO NOTHING RETURNING` decides a race of twins in one statement.
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
    const result = await this.repo
      .createQueryBuilder()
      .update()
      .set({ validAfter: auth.validAfter, validBefore: auth.validBefore, signature: auth.signature, updatedAt: () => 'now()' })
      .where(`id = :id AND status = 'reserved' AND relay_tx_id IS NULL AND updated_at < now() - make_interval(secs => :staleSeconds)`, { id, staleSeconds })
      .execute();
    return result.affected === 1;
  }

  /**
   * Takes over a `failed` row of the same (buyer, nonce) for a request the caller has fully
   * re-validated (docs/architecture.md §18): back to `reserved` with the new authorization. One caller wins.
   */
  async takeOverFailed(id: string, auth: StoredAuthorization): Promise<boolean> {
    const result = await this.repo.update(
      { id, status: 'failed' },
      { validAfter: auth.validAfter, validBefore: auth.validBefore, signature: auth.signature, status: 'reserved', relayTxId: null, txHash: null, error: null, updatedAt: () => 'now()' },
    );
    return result.affected === 1;
  }

  /** Takes back a `broadcast` row whose transaction `txHash` the node no longer knows, to send it again. One caller wins. */
  async reclaimDropped(id: string, txHash: string): Promise<boolean> {
    const result = await this.repo.update({ id, status: 'broadcast', txHash: txHash.toLowerCase() }, { status: 'reserved', relayTxId: null, txHash: null, updatedAt: () => 'now()' });
    return result.affected === 1;
  }

  /** The buyer's stored authorization of a relay (unix seconds and the 65-byte signature). */
  async storedAuthorization(id: string): Promise<StoredAuthorization> {
    const row = await this.repo.findOneOrFail({ select: { validAfter: true, validBefore: true, signature: true }, where: { id } });
    return { validAfter: row.validAfter, validBefore: row.validBefore, signature: row.signature };
  }

  async markQueued(id: string, relayTxId: string): Promise<void> {
    await this.repo.update({ id }, { relayTxId, updatedAt: () => 'now()' });
  }

  async markBroadcast(id: string, relayTxId: string, txHash: string): Promise<void> {
    await this.repo.update({ id }, { status: 'broadcast', relayTxId, txHash: txHash.toLowerCase(), updatedAt: () => 'now()' });
  }

  async markFailed(id: string, error: string): Promise<void> {
    await this.repo.update({ id }, { status: 'failed', error: error.slice(0, 500), updatedAt: () => 'now()' });
  }

  /** How many relays a checkout has (tests and operators). */
  countForCheckout(checkoutSessionId: string): Promise<number> {
    return this.repo.countBy({ checkoutSessionId });
  }
}
