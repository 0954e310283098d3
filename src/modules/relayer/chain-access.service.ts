import { Injectable, OnApplicationShutdown } from '@nestjs/common';
import { createProvider, EscrowGateway } from '@lib/chain';
import { JsonRpcProvider, Wallet } from 'ethers';
import { AppConfig } from '../../config/app-config';

/**
 * One JSON-RPC provider, {@link EscrowGateway} (escrow and USDC) and relayer wallet for the agents,
 * payments and relayer code (docs/architecture.md §5, §13). Amounts are USDC base units.
 */
@Injectable()
export class ChainAccess implements OnApplicationShutdown {
  readonly provider: JsonRpcProvider;
  readonly gateway: EscrowGateway;
  readonly relayer: Wallet;
  readonly chainId: number;

  constructor(config: AppConfig) {
    const env = config.env;
    this.chainId = env.CHAIN_ID;
    this.provider = createProvider(env.RPC_URL, env.CHAIN_ID);
    this.gateway = new EscrowGateway(this.provider, { escrowAddress: env.ESCROW_ADDRESS, usdcAddress: env.USDC_ADDRESS });
    this.relayer = new Wallet(env.RELAYER_PRIVATE_KEY, this.provider);
  }

  /** Unix seconds of the latest block: the clock EIP-3009 validity and escrow deadlines use. */
  headTimestamp(): Promise<number> {
    return this.gateway.headTimestamp();
  }

  onApplicationShutdown(): void {
    this.provider.destroy();
  }
}
