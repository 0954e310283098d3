import { Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { type ChainClock, connectChain, createProvider, type EscrowGateway, isNodeError, lastConfirmedBlock, type UsdcGateway } from '@lib/chain';
import { JsonRpcProvider, Wallet } from 'ethers';
import { AppError } from '../common/errors/app-error';
import { AppConfig } from '../config/app-config';

/** Retry-After (seconds) of a 503 for a chain read the node did not answer. */
export const CHAIN_RETRY_AFTER_SECONDS = 2;

/**
 * 503 `unavailable` (`details.reason: "chain_unavailable"`, `Retry-After`) for a chain read the node
 * failed twice (DESIGN §22 "Reads that fail answer 503"). The node's own error is kept in `nodeError`
 * for logs, never echoed (it can carry the RPC URL and a provider's key).
 */
export class ChainUnavailableError extends AppError {
  constructor(
    readonly what: string,
    readonly nodeError: unknown,
  ) {
    super('unavailable', `The chain node did not answer (${what}); nothing was decided: retry shortly`, { reason: 'chain_unavailable' }, 503, { 'Retry-After': String(CHAIN_RETRY_AFTER_SECONDS) });
  }
}

/**
 * The process's one JSON-RPC provider (each request times out after RPC_TIMEOUT_MS), its
 * {@link EscrowGateway} (`gateway`), {@link UsdcGateway} (`usdc`, EIP-3009) and {@link ChainClock}
 * (`clock`), sharing one sender, and the relayer wallet (docs/architecture.md §5, §13;
 * DESIGN §17 "a chain room"). Every domain's chain view (escrow, verification, agents, payments,
 * reconciliation) reads through it. Amounts are USDC base units.
 */
@Injectable()
export class ChainAccess implements OnApplicationShutdown {
  private readonly logger = new Logger('ChainAccess');
  readonly provider: JsonRpcProvider;
  readonly gateway: EscrowGateway;
  readonly usdc: UsdcGateway;
  readonly clock: ChainClock;
  readonly chainId: number;
  private relayerWallet: Wallet | null = null;

  constructor(private readonly config: AppConfig) {
    const env = config.env;
    this.chainId = env.CHAIN_ID;
    this.provider = createProvider(env.RPC_URL, env.CHAIN_ID, { timeoutMs: env.RPC_TIMEOUT_MS });
    const chain = connectChain(this.provider, { escrowAddress: env.ESCROW_ADDRESS, usdcAddress: env.USDC_ADDRESS, usdcDomain: config.usdcDomain, waitMs: env.CHAIN_WAIT_MS });
    this.gateway = chain.escrow;
    this.usdc = chain.usdc;
    this.clock = chain.clock;
  }

  /**
   * The relayer wallet, built on first use: a process that never relays (most CLI commands) never
   * loads the key (docs/architecture.md §10).
   * @throws Error when this process does not load RELAYER_PRIVATE_KEY.
   */
  get relayer(): Wallet {
    this.relayerWallet ??= new Wallet(this.config.secret('RELAYER_PRIVATE_KEY'), this.provider);
    return this.relayerWallet;
  }

  /** Unix seconds of the latest block: the clock EIP-3009 validity and escrow deadlines use. @throws ChainUnavailableError. */
  headTimestamp(): Promise<number> {
    return this.read('head timestamp', () => this.clock.headTimestamp());
  }

  /**
   * Whether `authorizer`'s EIP-3009 `nonce` is used or cancelled, and the chain time, both read at ONE
   * block: head − CONFIRMATIONS (DESIGN §18 "Confirmations"; issue 29 finding 6). Read at two heads, a
   * use mined between the reads looked like "unused, and past validBefore" — `failed expired` for a
   * payment that was paid. At one block the answer is consistent: `timestamp ≥ validBefore` with
   * `used: false` means no later block can use it (block time only grows), so it expired unused.
   * One chain read ({@link read}): a node error is retried once at a fresh head.
   * @returns `used`, `timestamp` (unix seconds) and `blockNumber` of the block both come from.
   * @throws ChainUnavailableError when the node fails twice.
   */
  authorizationAt(authorizer: string, nonce: string): Promise<{ used: boolean; timestamp: number; blockNumber: number }> {
    return this.read('authorization state', async () => {
      const blockNumber = Math.max(0, lastConfirmedBlock(await this.provider.getBlockNumber(), this.config.env.CONFIRMATIONS));
      const [used, block] = await Promise.all([this.usdc.authorizationState(authorizer, nonce, blockNumber), this.provider.getBlock(blockNumber)]);
      if (!block) throw new Error(`unknown block ${blockNumber} (the node's head moved back)`);
      return { used, timestamp: block.timestamp, blockNumber };
    });
  }

  /**
   * Runs the chain read `fn` (DESIGN §22 "Reads that fail answer 503"): a node error ({@link isNodeError}:
   * timeout, network, server, unknown, data-less call exception, a block out of range after a reorg)
   * is retried once, shortly after, with `fn` called anew — so a read pinned to the head it read
   * first reads a fresh head — and a second one becomes {@link ChainUnavailableError}. Anything else
   * (a revert, a domain error) passes through untouched. Nested reads retry once in all: the inner
   * one's ChainUnavailableError is not a node error.
   * @param what names the read in the message and the log ("signer balance").
   * @throws ChainUnavailableError (503 `unavailable`, `Retry-After`) when the node failed twice.
   */
  async read<T>(what: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if (!isNodeError(err)) throw err;
      this.logger.warn({ read: what, error: (err as Error).message?.slice(0, 300) }, 'chain read failed; retrying once at a fresh head');
    }
    await new Promise((r) => setTimeout(r, Math.min(this.config.env.CHAIN_POLL_MS, 250)));
    try {
      return await fn();
    } catch (err) {
      if (!isNodeError(err)) throw err;
      throw new ChainUnavailableError(what, err);
    }
  }

  onApplicationShutdown(): void {
    this.provider.destroy();
  }
}
