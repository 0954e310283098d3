import { Injectable, Logger } from '@nestjs/common';
import { ChainTxError, toTxError } from '@lib/chain';
import { Transaction } from 'ethers';
import { TransactionHost, TxHost } from '../../database/transaction';
import { ChainAccess } from './chain-access.service';
import { RelayerRepository } from './relayer.repository';

/**
 * Signs and broadcasts one queued relayer transaction (docs/architecture.md §5): the gas estimate
 * runs first (a call that would revert fails the job without using a nonce), the nonce is allocated
 * in Postgres in a short transaction, the signed hash is committed before the broadcast, and a
 * refused broadcast gives the nonce back. Runs only inside the relayer queue's processor
 * (concurrency 1, global), so nonces of the relayer key are handed out one at a time.
 */
@Injectable()
export class RelayerSender {
  private readonly logger = new Logger('Relayer');

  constructor(
    private readonly chain: ChainAccess,
    private readonly repo: RelayerRepository,
    private readonly txHost: TransactionHost,
  ) {}

  /**
   * @returns the broadcast transaction hash (the stored one when this row was sent before).
   * @throws ChainTxError when the call would revert or the node refuses it (the row is marked failed);
   *   Error when the row does not exist.
   */
  async send(relayTxId: string): Promise<string> {
    const row = await this.repo.find(relayTxId);
    if (!row) throw new Error(`relayer transaction ${relayTxId} does not exist`);
    if (row.status === 'broadcast' && row.txHash) return row.txHash;
    if (row.status === 'failed') throw new ChainTxError(`relay ${row.purpose}: ${row.error}`, null, [], null, row.txHash);
    const wallet = this.chain.relayer;
    const provider = this.chain.provider;
    let gasLimit: bigint;
    try {
      const gas = await provider.estimateGas({ from: wallet.address, to: row.toAddress, data: row.data });
      gasLimit = gas + gas / 5n;
    } catch (err) {
      const e = toTxError(row.purpose, err, null);
      await this.repo.markFailed(row.id, e.message);
      throw e;
    }
    const [pending, feeData] = await Promise.all([provider.getTransactionCount(wallet.address, 'pending'), provider.getFeeData()]);
    // A stored next nonce above the node's pending count means transactions the node never kept (dropped,
    // or a local chain restarted): if the one at `pending` is unknown to the node, start again from there.
    const peek = await this.repo.peek(wallet.address, pending);
    let resetTo: number | undefined;
    if (peek.next !== null && peek.next > pending) {
      const known = peek.txHashAtNonce ? await provider.getTransaction(peek.txHashAtNonce).catch(() => null) : null;
      if (!known) resetTo = pending;
    }
    const nonce = await (this.txHost as TxHost).withTransaction(() => this.repo.allocateNonce(wallet.address, pending, resetTo));
    const rawTx = await wallet.signTransaction({
      to: row.toAddress,
      data: row.data,
      nonce,
      gasLimit,
      chainId: this.chain.chainId,
      type: 2,
      maxFeePerGas: feeData.maxFeePerGas ?? undefined,
      maxPriorityFeePerGas: feeData.maxPriorityFeePerGas ?? undefined,
    });
    const txHash = Transaction.from(rawTx).hash!;
    await this.repo.markSigned(row.id, nonce, txHash);
    try {
      await provider.broadcastTransaction(rawTx);
    } catch (err) {
      if (!(await provider.getTransaction(txHash).catch(() => null))) {
        await (this.txHost as TxHost).withTransaction(() => this.repo.releaseNonce(wallet.address, nonce));
        const e = toTxError(row.purpose, err, null);
        await this.repo.markFailed(row.id, e.message);
        this.logger.warn({ relayTxId, nonce, error: e.message }, 'relayer broadcast refused');
        throw e;
      }
    }
    await this.repo.markBroadcast(row.id);
    return txHash;
  }
}
