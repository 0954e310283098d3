import type { Provider } from 'ethers';

/**
 * The chain's clock and head (docs/architecture.md §7): block numbers, block hashes and the latest
 * block's timestamp, which is the clock the contracts' deadlines and EIP-3009 validity use.
 */
export class ChainClock {
  constructor(readonly provider: Provider) {}

  /** Latest block number. */
  headBlock(): Promise<number> {
    return this.provider.getBlockNumber();
  }

  /** Hash of block `blockNumber`, null when it does not exist (yet). */
  async getBlockHash(blockNumber: number): Promise<string | null> {
    return (await this.provider.getBlock(blockNumber))?.hash ?? null;
  }

  /** Timestamp (unix seconds) of the latest block. @throws Error when the node returns no block. */
  async headTimestamp(): Promise<number> {
    const block = await this.provider.getBlock('latest');
    if (!block) throw new Error('node returned no latest block');
    return block.timestamp;
  }
}
