import { type BaseWallet, type ErrorFragment, Interface, isHexString, type Provider, type TransactionReceipt, type TransactionResponse } from 'ethers';
import { CheckoutEscrowArtifact, TestUSDCArtifact } from '@lib/contracts';
import { ChainTxError, ChainTxPendingError } from './errors';

/** TxSender's default bound on the wait for its own transaction (CHAIN_WAIT_MS's default). */
export const DEFAULT_TX_WAIT_MS = 120_000;

/** ABI of CheckoutEscrow (ethers Interface), shared by the gateways of this package. */
export const ESCROW_IFACE = new Interface(CheckoutEscrowArtifact.abi);
/** ABI of the USDC token (FiatTokenV2 surface of TestUSDC), shared by the gateways of this package. */
export const USDC_IFACE = new Interface(TestUSDCArtifact.abi);
const ERRORS_IFACE = new Interface([
  ...new Map(
    [...ESCROW_IFACE.fragments, ...USDC_IFACE.fragments]
      .filter((f): f is ErrorFragment => f.type === 'error')
      .map((f) => [f.format('sighash'), f]),
  ).values(),
]);

/**
 * Sends contract calls from a wallet and waits for them (the write path of the gateways and the
 * testing senders). Estimates gas first (a would-be revert throws ChainTxError with the decoded
 * custom error), serialises sends per sender address with explicit `pending` nonces (within this
 * instance: share one per process for a hot wallet), waits for one confirmation (at most `waitMs`,
 * default {@link DEFAULT_TX_WAIT_MS}: DESIGN §22, every chain wait is bounded) and returns the hash.
 * The wait is outside the per-address queue: a transaction that does not mine never holds the next send.
 */
export class TxSender {
  private readonly queues = new Map<string, Promise<unknown>>();
  /** Bound in ms on the wait for one confirmation of a sent transaction. */
  readonly waitMs: number;

  /** @throws TypeError when `options.waitMs` is not a positive integer. */
  constructor(
    readonly provider: Provider,
    options: { waitMs?: number } = {},
  ) {
    this.waitMs = options.waitMs ?? DEFAULT_TX_WAIT_MS;
    if (!Number.isSafeInteger(this.waitMs) || this.waitMs <= 0) throw new TypeError(`TxSender: invalid waitMs ${this.waitMs}`);
  }

  /**
   * `wallet` sends `data` to `to`; returns the hash once it is mined with status 1 (one confirmation).
   * @throws ChainTxError (`label` names the call) when it would revert (no hash) or was mined reverted (hash);
   *   ChainTxPendingError (with the hash) when it was broadcast but no receipt came within `waitMs` or the
   *   node failed while waiting: unknown, not failed.
   */
  async send(wallet: BaseWallet, to: string, data: string, label: string): Promise<string> {
    const signer = wallet.connect(this.provider);
    const response: TransactionResponse = await this.serialize(signer.address, async () => {
      const gasLimit = await this.estimate(signer.address, to, data, label);
      const nonce = await this.provider.getTransactionCount(signer.address, 'pending');
      try {
        return await signer.sendTransaction({ to, data, nonce, gasLimit });
      } catch (err) {
        throw toTxError(label, err, null);
      }
    });
    let receipt: TransactionReceipt | null;
    try {
      // The provider's own receipt poll (createProvider: ethers' block-event wait can miss the block on a
      // chain that mines on demand), bounded: a timeout or a node error is "pending", never "reverted".
      receipt = await this.provider.waitForTransaction(response.hash, 1, this.waitMs);
    } catch (err) {
      throw new ChainTxPendingError(label, response.hash, { cause: err });
    }
    if (!receipt) throw new ChainTxPendingError(label, response.hash);
    // A mined revert carries no revert data in its receipt (ethers' wait() adds none either).
    if (receipt.status !== 1) throw toTxError(label, new Error(`mined with status ${receipt.status}`), response.hash);
    return response.hash;
  }

  /** Gas for `data` from `from` to `to` plus 20 %. @throws ChainTxError when the call would revert. */
  async estimate(from: string, to: string, data: string, label: string): Promise<bigint> {
    try {
      const gas = await this.provider.estimateGas({ from, to, data });
      return gas + gas / 5n;
    } catch (err) {
      throw toTxError(label, err, null);
    }
  }

  /** Runs `fn` after every earlier call with the same `lockKey` (any case) settled. */
  serialize<T>(lockKey: string, fn: () => Promise<T>): Promise<T> {
    const key = lockKey.toLowerCase();
    const run = (this.queues.get(key) ?? Promise.resolve()).then(fn, fn);
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    this.queues.set(key, tail);
    void tail.then(() => {
      if (this.queues.get(key) === tail) this.queues.delete(key);
    });
    return run;
  }
}

/**
 * Wraps an ethers send/estimate error as ChainTxError with the decoded custom error of the escrow or the
 * token when the revert data carries one; `txHash` only when the transaction exists.
 */
export function toTxError(label: string, err: unknown, txHash: string | null): ChainTxError {
  const data = revertData(err);
  let errorName: string | null = null;
  let errorArgs: unknown[] = [];
  if (data && data !== '0x') {
    try {
      const parsed = ERRORS_IFACE.parseError(data);
      if (parsed) {
        errorName = parsed.name;
        errorArgs = [...parsed.args];
      }
    } catch {
      errorName = null;
    }
  }
  const detail = errorName
    ? `${errorName}(${errorArgs.map(String).join(', ')})`
    : txHash
      ? 'reverted on chain'
      : (err as Error)?.message ?? String(err);
  return new ChainTxError(`${label}: ${detail}`, errorName, errorArgs, data, txHash, { cause: err });
}

function revertData(err: unknown): string | null {
  const seen = new Set<unknown>();
  const stack: unknown[] = [err];
  while (stack.length > 0) {
    const e = stack.pop();
    if (!e || typeof e !== 'object' || seen.has(e)) continue;
    seen.add(e);
    const rec = e as Record<string, unknown>;
    if (typeof rec.data === 'string' && isHexString(rec.data)) return rec.data;
    stack.push(rec.error, rec.info, rec.cause);
  }
  return null;
}
