import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';

/** Escrow statuses whose amount the contract still holds (DESIGN §18). */
export const HELD = ['funded', 'accepted', 'delivered', 'disputed'] as const;

/** An escrow row as reconciliation checks it; `amount_units` in USDC base units (decimal digits). */
export interface EscrowRecord {
  id: string;
  escrow_key: string;
  status: string;
  amount_units: string;
}

/**
 * Reconciliation's reads of the ledger (DESIGN §18; docs/architecture.md, Conventions 4: all SQL in
 * repositories). Each runs on its own pooled connection, in no transaction: a pass reads the ledger
 * first, then the chain, and never holds a transaction across a network call.
 */
@Injectable()
export class ReconciliationRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** Held escrows, and those changed within `days` (terminal ones are re-checked for that long). */
  escrows(days: number): Promise<EscrowRecord[]> {
    return this.dataSource.query(
      `SELECT id, escrow_key, status, amount_units FROM escrows
        WHERE status = ANY($1) OR updated_at > now() - make_interval(days => $2) ORDER BY created_at, id`,
      [HELD, days],
    );
  }

  /** Agent payments with an EIP-3009 authorization that ended (succeeded or failed) within `days`. */
  terminalPayments(days: number): Promise<Array<{ id: string; status: string; from_address: string; auth_nonce: string }>> {
    return this.dataSource.query(
      `SELECT id, status, from_address, auth_nonce FROM payments
        WHERE status IN ('succeeded', 'failed') AND auth_nonce IS NOT NULL AND updated_at > now() - make_interval(days => $1)`,
      [days],
    );
  }

  /**
   * x402 settlements that ended within `days`, and those answered 200 but open again (a reorg took
   * their transfer off the chain, DESIGN §22): reported until the transfer is mined again.
   */
  terminalSettlements(days: number): Promise<Array<{ id: string; status: string; payer: string; nonce: string }>> {
    return this.dataSource.query(
      `SELECT id, status, payer, nonce FROM x402_settlements
        WHERE (status IN ('settled', 'succeeded', 'failed') AND updated_at > now() - make_interval(days => $1))
           OR (status IN ('pending', 'reserved') AND answered_at IS NOT NULL)`,
      [days],
    );
  }

  /** Each relayer address's next nonce as allocated in Postgres (docs/architecture.md §5). */
  relayerNonces(): Promise<Array<{ address: string; next_nonce: string }>> {
    return this.dataSource.query(`SELECT address, next_nonce FROM relayer_nonces`);
  }

  /** Sum of the held escrows' amounts, in base units. */
  async heldSum(): Promise<bigint> {
    const rows: Array<{ sum: string | null }> = await this.dataSource.query(`SELECT sum(amount_units)::text AS sum FROM escrows WHERE status = ANY($1)`, [HELD]);
    return BigInt(rows[0].sum ?? '0');
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
