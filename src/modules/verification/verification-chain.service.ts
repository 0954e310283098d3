import { Injectable } from '@nestjs/common';
import { ANVIL_CHAIN_ID, ChainVerificationError, isConfirmed, type MinedTokenTransfers, readTokenTransfers } from '@lib/chain';
import { TestUSDCArtifact } from '@lib/contracts';
import { Contract, type ContractTransactionResponse, type JsonRpcProvider, Wallet } from 'ethers';
import { AppError } from '../../common/errors/app-error';
import { AppConfig } from '../../config/app-config';
import { ChainAccess } from '../../chain/chain-access.service';

/**
 * The wallet check's view of the chain (docs/architecture.md §12): the head (block number and
 * time, the chain's own clock) and the USDC transfers of a reported transaction, under the escrow
 * actions' rules: 400 with `details.reason` for a transaction that cannot count, 409
 * `reason: "pending"` while unmined or short of `CONFIRMATIONS`.
 */
@Injectable()
export class VerificationChain {
  private readonly provider: JsonRpcProvider;

  constructor(
    private readonly config: AppConfig,
    chain: ChainAccess,
  ) {
    this.provider = chain.provider;
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
    if (confirmations > 0 && !isConfirmed(mined.blockNumber, await this.provider.getBlockNumber(), confirmations)) {
      throw new AppError('invalid_request', `transaction ${txHash} has not reached ${confirmations} confirmations`, { reason: 'pending', txHash }, 409);
    }
    return mined;
  }

  /**
   * Local chain only (`demo:verify-wallet`): `wallet` sends `amount` USDC base units to `to`,
   * minting the shortfall first with the test token's open mint. Returns the transfer's hash.
   * @throws Error outside the local chain, or when the transfer reverts.
   */
  async demoTransfer(wallet: Wallet, to: string, amount: bigint): Promise<string> {
    if (this.config.env.CHAIN_ID !== ANVIL_CHAIN_ID) throw new Error('demo transfers run on the local chain only (CHAIN_ID 31337)');
    const usdc = new Contract(this.usdcAddress, TestUSDCArtifact.abi, wallet.connect(this.provider));
    const balance = (await usdc.getFunction('balanceOf').staticCall(wallet.address)) as bigint;
    const send = async (fn: 'mint' | 'transfer', ...args: unknown[]): Promise<string> => {
      const tx = (await usdc.getFunction(fn).send(...args)) as ContractTransactionResponse;
      // Bounded, and through the provider's receipt poll (libs/chain createProvider; ethers' tx.wait() can miss an automined block).
      const receipt = await this.provider.waitForTransaction(tx.hash, 1, this.config.env.CHAIN_WAIT_MS);
      if (!receipt || receipt.status !== 1) throw new Error(`USDC ${fn} ${tx.hash} reverted`);
      return tx.hash;
    };
    if (balance < amount) await send('mint', wallet.address, amount - balance);
    return send('transfer', to, amount);
  }
}
