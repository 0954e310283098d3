import { type FactoryProvider, Logger } from '@nestjs/common';
import { decodeAuthorizationCall } from '@lib/chain';
import { ChainAccess } from '../chain-access.service';
import { type RelayIntentCheck, RelayIntentChecks, type RelayUsability } from './relay-intent-check';
import type { RelayTxRow } from './relayer.repository';

/**
 * The {@link RelayIntentCheck} of relays that carry an EIP-3009 authorization: USDC
 * `transferWithAuthorization` or `receiveWithAuthorization` calldata (issue 29 finding 3, DESIGN §22
 * "Dead only when proven"). It reads `authorizationState` of the calldata's (from, nonce) and the chain
 * time, both at ONE block, head − CONFIRMATIONS ({@link ChainAccess.authorizationAt}):
 * - used or cancelled (`authorizationState` true: EIP-3009 does not tell them apart) → `dead`;
 * - the block's time at or past `validBefore` → `dead` (block time only grows, so no later block can use it);
 * - else → `usable`.
 * Calldata that is not an EIP-3009 use, or a read the node failed (twice, ChainUnavailableError) →
 * `unknown`: never proof either way. Never throws.
 *
 * The chain room names no domain: each domain that relays such calls registers one for its own relay
 * `purpose`s with {@link eip3009RelayCheck} (payments: `payment`, `x402`; refunds: `refund`).
 */
export class Eip3009RelayCheck implements RelayIntentCheck {
  private readonly logger: Logger;

  /**
   * @param name the check's name in logs (the domain's, e.g. `PaymentRelayCheck`).
   * @param purposes the relayer `purpose`s it judges.
   * @param chain the chain read it makes (the process's {@link ChainAccess}).
   */
  constructor(
    readonly name: string,
    readonly purposes: readonly string[],
    private readonly chain: Pick<ChainAccess, 'authorizationAt'>,
  ) {
    this.logger = new Logger(name);
  }

  /** The verdict on `row.data` (see the class). Never throws. */
  async stillUsable(row: Pick<RelayTxRow, 'data'>): Promise<RelayUsability> {
    const call = decodeAuthorizationCall(row.data);
    if (!call) return 'unknown';
    try {
      const at = await this.chain.authorizationAt(call.from, call.nonce);
      if (at.used) return 'dead';
      return BigInt(at.timestamp) >= call.validBefore ? 'dead' : 'usable';
    } catch (err) {
      this.logger.warn({ error: (err as Error).message?.slice(0, 200) }, 'authorization read failed; relay neither dead nor usable');
      return 'unknown';
    }
  }
}

/**
 * The provider a domain module lists (next to an import of RelayerModule) to register an
 * {@link Eip3009RelayCheck} for its relay `purposes` with the relayer's {@link RelayIntentChecks} when the
 * module is built (domain → chain). `name` is its injection token and its logger's name.
 * @throws Error (at module init) when another check already holds one of `purposes`.
 */
export function eip3009RelayCheck(name: string, purposes: readonly string[]): FactoryProvider<Eip3009RelayCheck> {
  return {
    provide: name,
    inject: [ChainAccess, RelayIntentChecks],
    useFactory: (chain: ChainAccess, checks: RelayIntentChecks) => {
      const check = new Eip3009RelayCheck(name, purposes, chain);
      checks.register(check);
      return check;
    },
  };
}
