import { Injectable, Logger, Module } from '@nestjs/common';
import { Interface } from 'ethers';
import { ChainAccess } from '../../chain/chain-access.service';
import { RelayIntentCheck, RelayIntentChecks, RelayUsability } from '../../chain/relayer/relay-intent-check';
import { RelayerModule } from '../../chain/relayer/relayer.module';
import type { RelayTxRow } from '../../chain/relayer/relayer.repository';
import { PAYMENT_RELAY_PURPOSE } from './transfer-payment-mode';

/** The EIP-3009 calls our relays send to USDC (vrs form, as EscrowGateway encodes them). */
const EIP3009 = new Interface([
  'function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, uint8 v, bytes32 r, bytes32 s)',
  'function receiveWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, uint8 v, bytes32 r, bytes32 s)',
]);

/**
 * Whether the EIP-3009 authorization a relay's calldata carries can still be used (issue 29 finding 3,
 * DESIGN §22 "Dead only when proven"): `authorizationState` of its (from, nonce) and the chain time, both
 * at ONE block, head − CONFIRMATIONS ({@link ChainAccess.authorizationAt}). Used or cancelled → `dead`;
 * the block's time at or past `validBefore` → `dead` (block time only grows); else `usable`. Calldata that
 * is not an EIP-3009 use, or a read the node failed → `unknown`.
 */
export async function authorizationUsability(chain: ChainAccess, data: string, logger?: Logger): Promise<RelayUsability> {
  let from: string;
  let nonce: string;
  let validBefore: bigint;
  try {
    const call = EIP3009.parseTransaction({ data });
    if (!call) return 'unknown';
    [from, , , , validBefore, nonce] = call.args as unknown as [string, string, bigint, bigint, bigint, string];
  } catch {
    return 'unknown';
  }
  try {
    const at = await chain.authorizationAt(from, nonce);
    if (at.used) return 'dead';
    return BigInt(at.timestamp) >= validBefore ? 'dead' : 'usable';
  } catch (err) {
    logger?.warn({ error: (err as Error).message?.slice(0, 200) }, 'authorization read failed; relay neither dead nor usable');
    return 'unknown';
  }
}

/**
 * The relay intent check of agent payments (`payment`) and of paid retries of our own x402 challenges
 * (`x402`): both relay a transferWithAuthorization (see {@link authorizationUsability}). Registers itself
 * with the relayer's {@link RelayIntentChecks} (domain → chain).
 */
@Injectable()
export class PaymentRelayCheck implements RelayIntentCheck {
  private readonly logger = new Logger('PaymentRelayCheck');
  readonly purposes = [PAYMENT_RELAY_PURPOSE, 'x402'] as const;

  constructor(
    private readonly chain: ChainAccess,
    checks: RelayIntentChecks,
  ) {
    checks.register(this);
  }

  stillUsable(row: Pick<RelayTxRow, 'data'>): Promise<RelayUsability> {
    return authorizationUsability(this.chain, row.data, this.logger);
  }
}

/**
 * {@link PaymentRelayCheck} on its own, so a process that runs the relayer's sender without the payments
 * domain's services (a relayer-only worker) still judges payment and x402 relays by a read.
 */
@Module({ imports: [RelayerModule], providers: [PaymentRelayCheck], exports: [PaymentRelayCheck] })
export class PaymentRelayCheckModule {}
