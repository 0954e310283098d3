import { Injectable, Logger } from '@nestjs/common';
import type { RelayTxRow } from './relayer.repository';

/**
 * What a read of the chain says about a relay's payload (DESIGN §22 "Dead only when proven"):
 * `dead` when it can no longer run (authorization used or cancelled, validBefore or deadline passed,
 * escrow state moved on), `usable` when it still can, `unknown` when the read could not decide (the
 * node failed it, the intent's record is gone).
 */
export type RelayUsability = 'usable' | 'dead' | 'unknown';

/**
 * Port of the relayer (issue 29 finding 3): the domain that owns a relay `purpose` says whether a
 * relay's payload is still usable, by a read of the chain at one block (head − CONFIRMATIONS). The
 * relayer (chain room) imports no domain; domains register their checks with {@link RelayIntentChecks}
 * (dependency direction domain → chain). Revert data from a node (an estimate) is never proof alone:
 * only a check's `dead` ends a relay.
 */
export interface RelayIntentCheck {
  /** The relayer `purpose`s this check judges (e.g. `payment`, `x402`). */
  readonly purposes: readonly string[];
  /**
   * Reads the chain for `row`'s payload. Must not throw for a node error (answer `unknown`); must not be
   * called inside a database transaction.
   */
  stillUsable(row: Pick<RelayTxRow, 'id' | 'purpose' | 'reference' | 'toAddress' | 'data'>): Promise<RelayUsability>;
}

/**
 * The registry of {@link RelayIntentCheck}s, one per purpose (DESIGN §22; issue 29 finding 3). Checks
 * register from their provider's constructor (as the payment mode table). A purpose without a check is
 * `unchecked`: the relayer keeps the older rule for it (revert data on a never-signed row ends it;
 * docs/decisions.md "Relays dead only on a confirming read").
 */
@Injectable()
export class RelayIntentChecks {
  private readonly logger = new Logger('RelayIntentChecks');
  private readonly checks = new Map<string, RelayIntentCheck>();

  /**
   * Registers `check` for each of its purposes.
   * @throws Error when a purpose already has another check.
   */
  register(check: RelayIntentCheck): void {
    for (const purpose of check.purposes) {
      const current = this.checks.get(purpose);
      if (current && current !== check) throw new Error(`relay purpose "${purpose}" already has an intent check`);
      this.checks.set(purpose, check);
    }
  }

  /** Whether `purpose` has a registered check. */
  has(purpose: string): boolean {
    return this.checks.has(purpose);
  }

  /**
   * The registered check's verdict on `row`, `unchecked` when its purpose has none; a check that throws
   * answers `unknown` (logged).
   */
  async judge(row: Pick<RelayTxRow, 'id' | 'purpose' | 'reference' | 'toAddress' | 'data'>): Promise<RelayUsability | 'unchecked'> {
    const check = this.checks.get(row.purpose);
    if (!check) return 'unchecked';
    try {
      return await check.stillUsable(row);
    } catch (err) {
      this.logger.warn({ relayTxId: row.id, purpose: row.purpose, error: (err as Error).message?.slice(0, 300) }, 'relay intent check failed; not proof either way');
      return 'unknown';
    }
  }
}
