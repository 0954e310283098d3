import { getAddress, id, isHexString, type Provider } from 'ethers';
import { ChainVerificationError } from './errors';

/** topic0 of ERC-20 `Transfer(address indexed from, address indexed to, uint256 value)`. */
export const ERC20_TRANSFER_TOPIC = id('Transfer(address,address,uint256)');

/** One decoded ERC-20 Transfer log. `value` in token base units. */
export interface TokenTransfer {
  from: string;
  to: string;
  value: bigint;
  logIndex: number;
}

/** The token transfers of one mined, successful transaction, with its block. */
export interface MinedTokenTransfers {
  txHash: string;
  blockNumber: number;
  blockHash: string;
  /** Block time, unix seconds (the chain's clock). */
  blockTimestamp: number;
  transfers: TokenTransfer[];
}

/**
 * Reads the `Transfer` logs that `token` emitted in transaction `txHash` (docs/architecture.md §12,
 * the wallet check). No confirmation depth is applied here: compare `blockNumber` with the head.
 * @throws ChainVerificationError `not_found` (bad hash or unknown to the node), `pending` (known, not
 *   mined) or `failed` (reverted).
 */
export async function readTokenTransfers(provider: Provider, token: string, txHash: string): Promise<MinedTokenTransfers> {
  const fail = (reason: 'not_found' | 'pending' | 'failed', message: string) => new ChainVerificationError(reason, message, txHash);
  if (!isHexString(txHash, 32)) throw fail('not_found', `${txHash} is not a transaction hash`);
  let receipt = await provider.getTransactionReceipt(txHash);
  if (!receipt) {
    const tx = await provider.getTransaction(txHash);
    if (!tx) throw fail('not_found', `transaction ${txHash} is unknown to the node`);
    if (tx.blockNumber != null) receipt = await provider.getTransactionReceipt(txHash);
    if (!receipt) throw fail('pending', `transaction ${txHash} is not mined yet`);
  }
  if (receipt.status !== 1) throw fail('failed', `transaction ${txHash} reverted`);
  const block = await provider.getBlock(receipt.blockNumber);
  if (!block) throw fail('pending', `block ${receipt.blockNumber} of ${txHash} is not available yet`);
  const tokenAddress = getAddress(token);
  const transfers: TokenTransfer[] = [];
  for (const log of receipt.logs) {
    if (getAddress(log.address) !== tokenAddress || log.topics.length !== 3 || log.topics[0] !== ERC20_TRANSFER_TOPIC) continue;
    transfers.push({
      from: getAddress(`0x${log.topics[1].slice(26)}`),
      to: getAddress(`0x${log.topics[2].slice(26)}`),
      value: BigInt(log.data),
      logIndex: log.index,
    });
  }
  return { txHash: receipt.hash, blockNumber: receipt.blockNumber, blockHash: receipt.blockHash, blockTimestamp: block.timestamp, transfers };
}

