import { Injectable, Logger } from '@nestjs/common';
import { ChainTxError, isNodeError } from '@lib/chain';
import { v7 as uuidv7 } from 'uuid';
import { AppConfig } from '../../config/app-config';
import { ChainAccess, ChainUnavailableError } from '../../chain/chain-access.service';
import { RelayerService, RelayTimeoutError } from '../../chain/relayer/relayer.service';
import { PaymentSettlement } from './payment-settlement.service';
import { X402Settlement } from './x402-settlement.entity';
import { X402Reservation, X402SettlementsRepository } from './x402-settlements.repository';
import { OrgsService } from '../orgs/orgs.service';
import type { ReceivedMoney } from './received-money';

/**
 * A settlement row as the x402 transport reads it (the entity, named here so a transport never
 * imports a domain's entity; docs/architecture.md §18 for the statuses).
 */
export type X402SettlementRecord = X402Settlement;

/** A settlement after one step: its row, and why our relay was refused before any broadcast (when it was). */
export interface X402Advance {
  row: X402SettlementRecord;
  refused?: string;
}

/**
 * Port for the crash proof: the x402 transport's paid retry calls `hit('after_reserved')` right
 * after {@link X402Settlements.reserve} committed the reservation. Bound to the no-op `NO_FAULTS` (common/faults) in production; crash tests provide
 * one that throws there, as if the process died before relaying.
 */
export abstract class X402Faults {
  abstract hit(point: 'after_reserved'): void;
}

/** Rows without the signed authorization (reserved before it was stored) are given up this long after creation when unused. */
const LEGACY_GIVE_UP_MS = 3_600_000;

/**
 * Settlement of paid retries of our own x402 challenges on a chain that does not mine at once
 * (docs/architecture.md §14, §18): the payments domain's record of them, called by the x402
 * transport (which keeps the protocol: headers, verification, answers) and by the worker's sweep.
 * A settlement is `pending` while its relay is queued or unmined, `settled` once
 * `AuthorizationUsed(payer, nonce)` is on chain at CONFIRMATIONS (seen here from the relay's
 * receipt, or by the USDC authorization indexer in {@link PaymentSettlement.pollOnce}), and
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
    private readonly repo: X402SettlementsRepository,
    private readonly config: AppConfig,
    private readonly orgs: OrgsService,
  ) {}

  /** How long one advance may hold a row: the relayer's broadcast wait, the receipt wait and a margin (ms). */
  get leaseMs(): number {
    return this.config.env.RELAYER_WAIT_MS + this.config.env.X402_RECEIPT_WAIT_MS + 10_000;
  }

  /** The settlement of (payer, nonce) (any letter case), or null. */
  async find(payer: string, nonce: string): Promise<X402SettlementRecord | null> {
    return this.repo.find(payer, nonce);
  }

  /**
   * Reserves (payer, nonce) as `pending`, leased to the caller, with the whole authorization.
   * @returns the new row's id, or null when (payer, nonce) is already reserved.
   */
  async reserve(r: X402Reservation): Promise<string | null> {
    const id = uuidv7();
    return (await this.repo.reserve(id, r, this.leaseMs)) ? id : null;
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
    if (!leased && !(await this.repo.claim(id, this.leaseMs))) {
      const row = (await this.repo.findById(id))!;
      if (row.status === 'pending' || row.status === 'reserved') await this.settlement.confirmUse(row.payer, row.nonce, await this.relayHashes(id), 0);
      return { row: (await this.repo.findById(id))! };
    }
    const row = (await this.repo.findById(id))!;
    let refused: string | undefined;
    try {
      refused = await this.step(row, waitMs, mode);
    } catch (err) {
      // A chain read the node failed decides nothing (DESIGN §22): the settlement stays as it stands (pending).
      if (!(err instanceof ChainUnavailableError) && !isNodeError(err)) throw err;
      this.logger.warn({ settlementId: id, error: (err as Error).message?.slice(0, 200) }, 'chain read failed while advancing an x402 settlement; it stays as it is');
    } finally {
      await this.repo.release(id);
    }
    return { row: (await this.repo.findById(id))!, refused };
  }

  /** Records the one 200 answer of a settled payment. @returns false when it was already given (a replay). */
  async markAnswered(id: string): Promise<boolean> {
    return this.repo.markAnswered(id);
  }

  /**
   * The worker's pass (docs/architecture.md §18): every pending settlement idle for
   * PAYMENT_SWEEP_IDLE_SECONDS and not held by a request is advanced once without waiting.
   * @returns how many were looked at.
   */
  async sweepOnce(idleSeconds = this.config.env.PAYMENT_SWEEP_IDLE_SECONDS): Promise<number> {
    const ids = await this.repo.idle(idleSeconds);
    for (const id of ids) {
      try {
        await this.advance(id, 0, 'sweep');
      } catch (err) {
        this.logger.warn({ settlementId: id, error: (err as Error).message }, 'x402 settlement sweep step failed');
      }
    }
    return ids.length;
  }

  private async step(row: X402Settlement, waitMs: number, mode: 'request' | 'sweep'): Promise<string | undefined> {
    if (await this.settlement.confirmUse(row.payer, row.nonce, await this.relayHashes(row.id), 0)) return undefined;
    // Used (by any sender) or cancelled: the chain decided; the indexer records which, at CONFIRMATIONS.
    // Used and chain time come from one block, head − CONFIRMATIONS (issue 29 finding 6).
    const state = await this.chain.authorizationAt(row.payer, row.nonce);
    if (state.used) return undefined;
    if (!row.signature || row.validBefore === null) {
      if (Date.now() - new Date(row.createdAt).getTime() > LEGACY_GIVE_UP_MS) await this.repo.fail(row.id, 'expired');
      return undefined;
    }
    if (BigInt(state.timestamp) >= row.validBefore) {
      await this.repo.fail(row.id, 'expired');
      return undefined;
    }
    const relays = await this.relayer.relaysFor('x402', row.id);
    const live = relays.find((r) => r.status !== 'failed');
    if (!live && mode === 'sweep' && relays.length) return undefined;
    try {
      if (live) await this.relayer.resume(live.id);
      else {
        const data = this.chain.usdc.encodeTransferWithAuthorization({
          from: row.payer,
          to: row.payTo,
          value: row.amount,
          validAfter: row.validAfter ?? 0n,
          validBefore: row.validBefore,
          nonce: row.nonce,
          signature: row.signature,
        });
        await this.relayer.relay({ to: this.chain.usdc.address, data, purpose: 'x402', reference: row.id });
      }
    } catch (err) {
      if (err instanceof RelayTimeoutError) return undefined;
      if (!(err instanceof ChainTxError)) throw err;
      // Refused before any broadcast: nothing moves now, but the authorization stays valid until validBefore.
      if (await this.chain.usdc.authorizationState(row.payer, row.nonce)) return undefined;
      await this.repo.noteError(row.id, err.message);
      this.logger.warn({ settlementId: row.id, error: err.message }, 'x402 relay refused; the settlement stays pending until used or expired');
      return err.message;
    }
    await this.settlement.confirmUse(row.payer, row.nonce, await this.relayHashes(row.id), waitMs);
    return undefined;
  }

  /** Every transaction hash our relayer signed for this settlement, fee-bump replacements included (DESIGN §18). */
  private relayHashes(id: string): Promise<string[]> {
    return this.relayer.hashesFor('x402', id);
  }

  /**
   * The settlement `id` received by `organizationId` (paid to its handle), locked FOR UPDATE until the
   * caller's transaction ends (the refund bound's lock, DESIGN §21), or null. Must run in a transaction.
   */
  async lockReceived(id: string, organizationId: string): Promise<ReceivedMoney | null> {
    const handle = (await this.orgs.getOrganization(organizationId))?.handle;
    return handle ? this.repo.lockReceivedBy(id, handle) : null;
  }

  /** Adds `delta` base units to the settlement's refunded amount, in the caller's transaction (the refunds module, DESIGN §21). */
  addRefunded(id: string, delta: bigint): Promise<void> {
    return this.repo.addRefunded(id, delta);
  }

  /** The settlement's refunded amount in base units (succeeded refunds; 0 for an unknown id). */
  refundedUnits(id: string): Promise<bigint> {
    return this.repo.refundedUnits(id);
  }
}
