import { Injectable, OnApplicationShutdown } from '@nestjs/common';
import { ChainVerificationError, createProvider, type MinedTokenTransfers, readTokenTransfers } from '@lib/chain';
import type { JsonRpcProvider } from 'ethers';
import { AppError } from '../../common/errors/app-error';
import { AppConfig } from '../../config/app-config';
import { lastConfirmedBlock } from '../escrow/escrow.state';

/**
 * The wallet check's view of the chain (docs/architecture.md §12): the head (block number and
 * time, the chain's own clock) and the USDC transfers of a reported transaction, under the escrow
 * actions' rules: 400 with `details.reason` for a transaction that cannot count, 409
 * `reason: "pending"` while unmined or short of `CONFIRMATIONS`.
 */
@Injectable()
export class VerificationChain implements OnApplicationShutdown {
  private readonly provider: JsonRpcProvider;

  constructor(private readonly config: AppConfig) {
    this.provider = createProvider(config.env.RPC_URL, config.env.CHAIN_ID);
  }

  get usdcAddress(): string {
    return this.config.env.USDC_ADDRESS;
  }

  /** The latest block: number and unix-seconds timestamp. */
  async head(): Promise<{ number: bigint; timestamp: bigint }> {
    const block = await this.provider.getBlock('latest');
    if (!block) throw new Error('node returned no latest block');
    return { number: BigInt(block.number), timestamp: BigInt(block.timestamp) };
  }

  /**
   * USDC transfers of a mined, successful, confirmed transaction.
   * @throws AppError 400 invalid_request `details.reason` not_found | failed; 409 `reason: "pending"`.
   */
  async usdcTransfers(txHash: string): Promise<MinedTokenTransfers> {
    let mined: MinedTokenTransfers;
    try {
      mined = await readTokenTransfers(this.provider, this.usdcAddress, txHash);
    } catch (err) {
      if (!(err instanceof ChainVerificationError)) throw err;
      if (err.reason === 'pending') throw new AppError('invalid_request', err.message, { reason: 'pending', txHash }, 409);
      throw new AppError('invalid_request', err.message, { reason: err.reason, txHash, fields: [{ param: 'txHash', message: err.message }] });
    }
    const confirmations = this.config.env.CONFIRMATIONS;
    if (confirmations > 0 && mined.blockNumber > lastConfirmedBlock(await this.provider.getBlockNumber(), confirmations)) {
      throw new AppError('invalid_request', `transaction ${txHash} has not reached ${confirmations} confirmations`, { reason: 'pending', txHash }, 409);
    }
    return mined;
  }

  onApplicationShutdown(): void {
    this.provider.destroy();
  }
}
