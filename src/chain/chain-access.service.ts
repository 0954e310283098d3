import { Injectable, OnApplicationShutdown } from '@nestjs/common';
import { createProvider, EscrowGateway } from '@lib/chain';
import { JsonRpcProvider, Wallet } from 'ethers';
import { AppConfig } from '../config/app-config';

/**
 * The process's one JSON-RPC provider (each request times out after RPC_TIMEOUT_MS), its
 * {@link EscrowGateway} (escrow and USDC) and the relayer wallet (docs/architecture.md §5, §13;
 * DESIGN §17 "a chain room"). Every domain's chain view (escrow, verification, agents, payments,
 * reconciliation) reads through it. Amounts are USDC base units.
 */
@Injectable()
export class ChainAccess implements OnApplicationShutdown {
  readonly provider: JsonRpcProvider;
  readonly gateway: EscrowGateway;
  readonly chainId: number;
  private relayerWallet: Wallet | null = null;

  constructor(private readonly config: AppConfig) {
    const env = config.env;
    this.chainId = env.CHAIN_ID;
    this.provider = createProvider(env.RPC_URL, env.CHAIN_ID, { timeoutMs: env.RPC_TIMEOUT_MS });
    this.gateway = new EscrowGateway(this.provider, { escrowAddress: env.ESCROW_ADDRESS, usdcAddress: env.USDC_ADDRESS, usdcDomain: config.usdcDomain });
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

  /** Unix seconds of the latest block: the clock EIP-3009 validity and escrow deadlines use. */
  headTimestamp(): Promise<number> {
    return this.gateway.headTimestamp();
  }

  onApplicationShutdown(): void {
    this.provider.destroy();
  }
}
