import { Injectable, Logger } from '@nestjs/common';
import { ChainTxError } from '@lib/chain';
import { v7 as uuidv7 } from 'uuid';
import { AppConfig } from '../../config/app-config';
import { TransactionHost, TxHost } from '../../database/transaction';
import { PaymentSettlement } from '../../modules/payments/payment-settlement.service';
import { ChainAccess } from '../../chain/chain-access.service';
import { RelayerService, RelayTimeoutError } from '../../chain/relayer/relayer.service';

/** One row of x402_settlements (amounts and times as stored: base units and unix seconds as decimal text). */
export interface X402SettlementRow {
  id: string;
  payer: string;
  nonce: string;
  pay_to: string;
  amount: string;
  resource: string;
  status: 'reserved' | 'pending' | 'settled' | 'failed';
  valid_after: string | null;
  valid_before: string | null;
  signature: string | null;
  tx_hash: string | null;
  error: string | null;
  answered_at: Date | null;
  created_at: Date;
}

/** What a paid retry reserves: the verified EIP-3009 authorization, whole, and the challenge it pays. */
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

/** A settlement after one step: its row, and why our relay was refused before any broadcast (when it was). */
export interface X402Advance {
  row: X402SettlementRow;
  refused?: string;
}

/**
 * Port for the crash proof: the x402 settle calls `hit('after_reserved')` right after the
 * reservation is committed. Bound to the no-op `NO_FAULTS` (common/faults) in production; crash tests provide
 * one that throws there, as if the process died before relaying.
 */
export abstract class X402Faults {
  abstract hit(point: 'after_reserved'): void;
}

/** Rows of an `UPDATE … RETURNING` (TypeORM's Postgres driver answers `[rows, affected]` for UPDATE). */
function returning<T = unknown>(result: unknown): T[] {
  if (Array.isArray(result) && result.length === 2 && Array.isArray(result[0]) && typeof result[1] === 'number') return result[0] as T[];
  return result as T[];
}

/** Rows without the signed authorization (reserved before it was stored) are given up this long after creation when unused. */
const LEGACY_GIVE_UP_MS = 3_600_000;

/**
 * Settlement of paid retries of our own x402 challenges on a chain that does not mine at once
 * (docs/architecture.md §14, §18). A settlement is `pending` while its relay is queued or unmined,
 * `settled` once `AuthorizationUsed(payer, nonce)` is on chain at CONFIRMATIONS (seen here from the
 * relay's receipt, or by the USDC authorization indexer in {@link PaymentSettlement.pollOnce}), and
 * `failed` only once chain time is past `validBefore` with the authorization unused (or it was
 * cancelled). One request or sweep at a time advances a row (a lease in the row, so no database
 * transaction is held across chain calls); a crash leaves the lease to expire, and the worker's
 * {@link sweepOnce} or a retry of the same header resumes it.
 */
@Injectable()
export class X402Settlements {
  private readonly logger = new Logger('X402Settlements');

  constructor(
    private readonly chain: ChainAccess,
    private readonly relayer: RelayerService,
    private readonly settlement: PaymentSettlement,
    private readonly txHost: TransactionHost,
    private readonly config: AppConfig,
  ) {}

  /** How long one advance may hold a row: the relayer's broadcast wait, the receipt wait and a margin (ms). */
  get leaseMs(): number {
    return this.config.env.RELAYER_WAIT_MS + this.config.env.X402_RECEIPT_WAIT_MS + 10_000;
  }

  /** The settlement of (payer, nonce), or null. */
  async find(payer: string, nonce: string): Promise<X402SettlementRow | null> {
    const rows: X402SettlementRow[] = await this.em().query(`SELECT * FROM x402_settlements WHERE payer = lower($1) AND nonce = lower($2)`, [payer, nonce]);
    return rows[0] ?? null;
  }

  /**
   * Reserves (payer, nonce) as `pending`, leased to the caller, with the whole authorization.
   * @returns the new row's id, or null when (payer, nonce) is already reserved.
   */
  async reserve(r: X402Reservation): Promise<string | null> {
    const id = uuidv7();
    const rows: unknown[] = await this.em().query(
      `INSERT INTO x402_settlements (id, payer, nonce, pay_to, payee_handle, amount, resource, status, valid_after, valid_before, signature, lease_until)
       VALUES ($1, lower($2), lower($3), $4, $5, $6, $7, 'pending', $8, $9, $10, now() + $11 * interval '1 millisecond')
       ON CONFLICT (payer, nonce) DO NOTHING RETURNING id`,
      [id, r.payer, r.nonce, r.to, r.payeeHandle, r.value, r.resource, r.validAfter, r.validBefore, r.signature, this.leaseMs],
    );
    return rows.length === 1 ? id : null;
  }

  /**
   * Moves a settlement forward once, outside any database transaction. When another request or sweep
   * holds the row, only looks (a receipt already mined is recorded). Otherwise: settled from a mined
   * relay; left pending when the authorization is already used or cancelled on chain (the indexer
   * decides); failed when chain time is past `validBefore` unused; else the live relay is resumed or a
   * new one queued (a `sweep` only resumes, never re-relays after a refusal), and its receipt is
   * waited for at most `waitMs` at CONFIRMATIONS. `leased`: the caller holds the row's lease already
   * (it has just reserved it).
   * @returns the row afterwards, and the refusal when our relay was refused before any broadcast.
   */
  async advance(id: string, waitMs: number, mode: 'request' | 'sweep', leased = false): Promise<X402Advance> {
    const claimed = leased
      ? [(await this.findById(id))!]
      : returning<X402SettlementRow>(
          await this.em().query(
            `UPDATE x402_settlements SET status = 'pending', lease_until = now() + $2 * interval '1 millisecond', updated_at = now()
              WHERE id = $1 AND status IN ('reserved', 'pending') AND (lease_until IS NULL OR lease_until < now()) RETURNING *`,
            [id, this.leaseMs],
          ),
        );
    if (!claimed.length) {
      const row = (await this.findById(id))!;
      if (row.status === 'pending' || row.status === 'reserved') await this.settlement.confirmUse(row.payer, row.nonce, await this.relayHashes(id), 0);
      return { row: (await this.findById(id))! };
    }
    const row = claimed[0];
    let refused: string | undefined;
    try {
      refused = await this.step(row, waitMs, mode);
    } finally {
      await this.em().query(`UPDATE x402_settlements SET lease_until = NULL WHERE id = $1`, [id]);
    }
    return { row: (await this.findById(id))!, refused };
  }

  /** Records the one 200 answer of a settled payment. @returns false when it was already given (a replay). */
  async markAnswered(id: string): Promise<boolean> {
    const rows = returning(await this.em().query(`UPDATE x402_settlements SET answered_at = now() WHERE id = $1 AND status = 'settled' AND answered_at IS NULL RETURNING id`, [id]));
    return rows.length === 1;
  }

  /**
   * The worker's pass (docs/architecture.md §18): every pending settlement idle for
   * PAYMENT_SWEEP_IDLE_SECONDS and not held by a request is advanced once without waiting.
   * @returns how many were looked at.
   */
  async sweepOnce(idleSeconds = this.config.env.PAYMENT_SWEEP_IDLE_SECONDS): Promise<number> {
    const rows: Array<{ id: string }> = await this.em().query(
      `SELECT id FROM x402_settlements WHERE status IN ('reserved', 'pending') AND (lease_until IS NULL OR lease_until < now())
        AND updated_at < now() - $1 * interval '1 second' ORDER BY updated_at LIMIT 100`,
      [idleSeconds],
    );
    for (const { id } of rows) {
      try {
        await this.advance(id, 0, 'sweep');
      } catch (err) {
        this.logger.warn({ settlementId: id, error: (err as Error).message }, 'x402 settlement sweep step failed');
      }
    }
    return rows.length;
  }

  private async step(row: X402SettlementRow, waitMs: number, mode: 'request' | 'sweep'): Promise<string | undefined> {
    const gateway = this.chain.gateway;
    if (await this.settlement.confirmUse(row.payer, row.nonce, await this.relayHashes(row.id), 0)) return undefined;
    // Used (by any sender) or cancelled: the chain decided; the indexer records which, at CONFIRMATIONS.
    if (await gateway.authorizationState(row.payer, row.nonce)) return undefined;
    if (!row.signature || row.valid_before === null) {
      if (Date.now() - new Date(row.created_at).getTime() > LEGACY_GIVE_UP_MS) await this.fail(row.id, 'expired');
      return undefined;
    }
    if (BigInt(await gateway.headTimestamp()) >= BigInt(row.valid_before)) {
      await this.fail(row.id, 'expired');
      return undefined;
    }
    const relays: Array<{ id: string; status: string }> = await this.em().query(
      `SELECT id, status FROM relayer_transactions WHERE reference = $1 AND purpose = 'x402' ORDER BY created_at DESC`,
      [row.id],
    );
    const live = relays.find((r) => r.status !== 'failed');
    if (!live && mode === 'sweep' && relays.length) return undefined;
    try {
      if (live) await this.relayer.resume(live.id);
      else {
        const data = gateway.encodeTransferWithAuthorization({
          from: row.payer,
          to: row.pay_to,
          value: BigInt(row.amount),
          validAfter: BigInt(row.valid_after ?? '0'),
          validBefore: BigInt(row.valid_before),
          nonce: row.nonce,
          signature: row.signature,
        });
        await this.relayer.relay({ to: gateway.usdcAddress, data, purpose: 'x402', reference: row.id });
      }
    } catch (err) {
      if (err instanceof RelayTimeoutError) return undefined;
      if (!(err instanceof ChainTxError)) throw err;
      // Refused before any broadcast: nothing moves now, but the authorization stays valid until validBefore.
      if (await gateway.authorizationState(row.payer, row.nonce)) return undefined;
      await this.em().query(`UPDATE x402_settlements SET error = $2, updated_at = now() WHERE id = $1`, [row.id, err.message.slice(0, 500)]);
      this.logger.warn({ settlementId: row.id, error: err.message }, 'x402 relay refused; the settlement stays pending until used or expired');
      return err.message;
    }
    await this.settlement.confirmUse(row.payer, row.nonce, await this.relayHashes(row.id), waitMs);
    return undefined;
  }

  private async fail(id: string, reason: string): Promise<void> {
    await this.em().query(`UPDATE x402_settlements SET status = 'failed', error = $2, updated_at = now() WHERE id = $1 AND status IN ('reserved', 'pending')`, [id, reason]);
  }

  /** Every transaction hash our relayer signed for this settlement, fee-bump replacements included (DESIGN §18). */
  private async relayHashes(id: string): Promise<string[]> {
    const rows: Array<{ tx_hash: string }> = await this.em().query(
      `SELECT DISTINCT unnest(tx_hashes || CASE WHEN tx_hash IS NULL THEN '{}'::text[] ELSE ARRAY[tx_hash] END) AS tx_hash
         FROM relayer_transactions WHERE reference = $1 AND purpose = 'x402'`,
      [id],
    );
    return rows.map((r) => r.tx_hash);
  }

  private async findById(id: string): Promise<X402SettlementRow | null> {
    const rows: X402SettlementRow[] = await this.em().query(`SELECT * FROM x402_settlements WHERE id = $1`, [id]);
    return rows[0] ?? null;
  }

  private em() {
    return (this.txHost as TxHost).tx;
  }
}
