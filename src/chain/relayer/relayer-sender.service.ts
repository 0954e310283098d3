import { Injectable, Logger } from '@nestjs/common';
import { ChainTxError, toTxError } from '@lib/chain';
import { isError, parseEther, Transaction } from 'ethers';
import { AppConfig } from '../../config/app-config';
import { TransactionHost, TxHost } from '../../database/transaction';
import { ChainAccess } from '../chain-access.service';
import { RelayerTender } from './relayer-tender.service';
import { judgedByChain } from './relay-errors';
import { RelayIntentChecks } from './relay-intent-check';
import { RelayerRepository } from './relayer.repository';

/**
 * Port for the crash proofs: {@link RelayerSender.send} calls `hit('after_signed')` right after
 * committing the signed transaction. Bound to the no-op `NO_FAULTS` (common/faults) in production; crash tests
 * provide one that throws there, as if the process died before broadcasting.
 */
export abstract class RelayerFaults {
  abstract hit(point: 'after_signed'): void;
}

/** The relayer's ETH is below RELAYER_MIN_BALANCE: the row was left queued (no nonce, not failed). */
export class RelayerUnfundedError extends Error {
  constructor(readonly relayTxId: string) {
    super(`relayer ETH below RELAYER_MIN_BALANCE; relayer transaction ${relayTxId} stays queued`);
  }
}

/**
 * The node refused a broadcast for its fees (maxFeePerGas below the base fee of the block it could enter,
 * the pending base fee above RELAYER_MAX_FEE_GWEI): the row was left queued without a nonce (not failed;
 * nothing reached the chain), and {@link RelayerService.resume} or a retry of the caller sends it later
 * at the fees of that time (DESIGN §18 "Relayer": a fee spike delays a relay, it never fails it).
 */
export class RelayerUnderpricedError extends Error {
  constructor(
    readonly relayTxId: string,
    readonly nodeMessage: string,
  ) {
    super(`relayer transaction ${relayTxId} refused for its fees (${nodeMessage}); it stays queued`);
  }
}

/**
 * The outcome of a send is not known (the node did not answer the broadcast, or refused stored bytes
 * whose nonce is still free): the row stays queued with its signed bytes at its nonce, and the next
 * send (the tender's pass over queued rows, a caller's resume) sends those same bytes again (issue 29
 * finding 7: never re-signed at a new nonce without proof that the nonce was used).
 */
export class RelayerUnsureError extends Error {
  constructor(
    readonly relayTxId: string,
    readonly nodeMessage: string,
  ) {
    super(`relayer transaction ${relayTxId}: outcome unknown (${nodeMessage}); its signed bytes stay queued`);
  }
}

/** Node refusals of a new transaction for its fees (geth, reth, anvil wording); a replacement's "underpriced" is not one. */
const UNDERPRICED = /max fee per gas less than block base fee|fee cap less than block base fee|feecap too low|^(?!.*replacement).*transaction underpriced/i;

/** The node's words in an ethers error, for {@link UNDERPRICED}. */
function nodeMessage(err: unknown): string {
  const e = err as { error?: { message?: string }; info?: { error?: { message?: string } }; shortMessage?: string; message?: string };
  return e?.error?.message ?? e?.info?.error?.message ?? e?.shortMessage ?? e?.message ?? String(err);
}

/**
 * Signs and broadcasts one queued relayer transaction (docs/architecture.md §5): the gas estimate
 * runs first (a call that would revert fails the job without using a nonce; the row is failed only when
 * its purpose's {@link RelayIntentCheck} confirms the payload dead by a read, else it stays queued), the nonce is allocated
 * in Postgres in a short transaction, the signed hash is committed before the broadcast, and a
 * refused broadcast gives the nonce back. A row signed before but not known to be broadcast (the
 * process stopped in between) is sent again with the same signed bytes: same nonce, same hash. Fees are
 * EIP-1559 from the node, capped at RELAYER_MAX_FEE_GWEI ({@link RelayerTender.fees}). Runs only inside the relayer queue's processor
 * (concurrency 1, global), so nonces of the relayer key are handed out one at a time.
 */
@Injectable()
export class RelayerSender {
  private readonly logger = new Logger('Relayer');

  constructor(
    private readonly chain: ChainAccess,
    private readonly repo: RelayerRepository,
    private readonly txHost: TransactionHost,
    private readonly faults: RelayerFaults,
    private readonly tender: RelayerTender,
    private readonly config: AppConfig,
    private readonly checks: RelayIntentChecks,
  ) {}

  /**
   * @returns the broadcast transaction hash (the stored one when this row was sent before).
   * @throws ChainTxError when the call would revert or the node refuses it (the row is marked failed);
   *   RelayerUnfundedError when the relayer's ETH is below RELAYER_MIN_BALANCE (the row stays queued);
   *   RelayerUnderpricedError when the node refused it for its fees (the row stays queued, unsigned);
   *   RelayerUnsureError when the broadcast got no answer, or stored bytes were refused while their nonce is
   *   unused (the row stays queued with those bytes);
   *   Error when the row does not exist.
   */
  async send(relayTxId: string): Promise<string> {
    const row = await this.repo.find(relayTxId);
    if (!row) throw new Error(`relayer transaction ${relayTxId} does not exist`);
    if (row.status === 'broadcast' && row.txHash) return row.txHash;
    if (row.status === 'failed') throw new ChainTxError(`relay ${row.purpose}: ${row.error}`, null, [], null, row.txHash);
    const wallet = this.chain.relayer;
    const provider = this.chain.provider;
    if (row.rawTx && row.txHash) {
      // Signed before, broadcast unknown (the process stopped in between): send the same bytes again.
      const resent = await this.rebroadcast(row.rawTx, row.txHash);
      if (resent) {
        await this.repo.markBroadcast(row.id);
        return row.txHash;
      }
      // Refused bytes are not proof the nonce was used (issue 29 finding 7): ask the chain before signing anew.
      const latest = await provider.getTransactionCount(wallet.address, 'latest');
      if (row.nonce === null || row.nonce >= latest) {
        // The nonce is still free: the node refused these bytes for another reason (fees, a node error). Keep them.
        throw new RelayerUnsureError(relayTxId, 'its signed bytes were not taken and its nonce is not used yet');
      }
      const mined = await this.minedHash(row.txHashes.length ? row.txHashes : [row.txHash]);
      if (mined) {
        await this.repo.markBroadcast(row.id);
        return mined;
      }
      this.logger.warn({ relayTxId, nonce: row.nonce, txHash: row.txHash }, 'nonce of a signed relayer transaction used by another transaction; signing it again');
      await this.repo.clearSigned(row.id);
    }
    let gasLimit: bigint;
    try {
      const gas = await provider.estimateGas({ from: wallet.address, to: row.toAddress, data: row.data });
      gasLimit = gas + gas / 5n;
    } catch (err) {
      const e = toTxError(row.purpose, err, null);
      // Dead only on revert data (issue 29 finding 3; DESIGN §22 "a node error is never proof"): ethers v6
      // reports every JSON-RPC error of eth_estimateGas as CALL_EXCEPTION; without revert data (a timeout,
      // "header not found", -32603, a rate limit) the row stays queued and is sent on a later pass.
      if (!judgedByChain(e)) throw new RelayerUnsureError(relayTxId, e.message);
      // Revert data is the node's word, estimated against its pending block (where this relay's own earlier
      // bytes may already have used the authorization): dead only when the intent's check confirms it by a
      // read at head − CONFIRMATIONS (issue 29 finding 3; DESIGN §22 "Dead only when proven").
      const verdict = await this.checks.judge(row);
      if (verdict !== 'dead' && verdict !== 'unchecked') {
        this.logger.warn({ relayTxId, purpose: row.purpose, verdict, error: e.message }, 'estimate reverted but a read of the chain does not prove the relay dead; it stays queued');
        throw new RelayerUnsureError(relayTxId, `${e.message} (not confirmed by a read: ${verdict})`);
      }
      await this.repo.markFailed(row.id, e.message);
      throw e;
    }
    // Out of gas money: the row stays queued without a nonce (never failed for it) and goes out once refilled.
    if ((await provider.getBalance(wallet.address)) < parseEther(this.config.env.RELAYER_MIN_BALANCE)) {
      throw new RelayerUnfundedError(relayTxId);
    }
    const fees = await this.tender.fees();
    let pending = await provider.getTransactionCount(wallet.address, 'pending');
    // A stored next nonce above the node's pending count means transactions the node never kept (dropped,
    // or a local chain restarted). A row of ours holding that nonce is revived (resent, or filled when its
    // call would now revert) so the nonces above it still go through; with none, start again from `pending`.
    const peek = await this.repo.peek(wallet.address, pending);
    let resetTo: number | undefined;
    if (peek.next !== null && peek.next > pending) {
      const known = peek.txHashAtNonce ? await provider.getTransaction(peek.txHashAtNonce).catch(() => null) : null;
      if (!known && (await this.tender.repairAt(pending))) {
        pending = await provider.getTransactionCount(wallet.address, 'pending');
      } else if (!known) {
        resetTo = pending;
      }
    }
    const nonce = await (this.txHost as TxHost).withTransaction(() => this.repo.allocateNonce(wallet.address, pending, resetTo));
    const rawTx = await wallet.signTransaction({
      to: row.toAddress,
      data: row.data,
      nonce,
      gasLimit,
      chainId: this.chain.chainId,
      type: 2,
      ...fees,
    });
    const txHash = Transaction.from(rawTx).hash!;
    await this.repo.markSigned(row.id, nonce, txHash, rawTx);
    this.faults.hit('after_signed');
    try {
      await provider.broadcastTransaction(rawTx);
    } catch (err) {
      if (isError(err, 'TIMEOUT') || isError(err, 'NETWORK_ERROR') || isError(err, 'SERVER_ERROR')) {
        // No answer is not a refusal: the node may hold the bytes (issue 29 finding 7). They stay signed at
        // their nonce; the next send (the tender, a resume) sends the same bytes again, never new ones.
        this.logger.warn({ relayTxId, nonce, txHash, error: (err as Error).message }, 'relayer broadcast got no answer; the signed bytes stay and are sent again');
        throw new RelayerUnsureError(relayTxId, nodeMessage(err));
      }
      if (!(await provider.getTransaction(txHash).catch(() => null))) {
        await (this.txHost as TxHost).withTransaction(() => this.repo.releaseNonce(wallet.address, nonce));
        const words = nodeMessage(err);
        if (UNDERPRICED.test(words) || UNDERPRICED.test(String((err as Error)?.message ?? ''))) {
          // A fee spike is not a refusal of the call: the row goes back to queued, unsigned, for a later send.
          await this.repo.clearSigned(row.id);
          this.logger.warn({ relayTxId, nonce, fees: { maxFeePerGas: String(fees.maxFeePerGas), maxPriorityFeePerGas: String(fees.maxPriorityFeePerGas) }, error: words }, 'relayer broadcast refused for its fees; the relay stays queued');
          throw new RelayerUnderpricedError(relayTxId, words);
        }
        const e = toTxError(row.purpose, err, null);
        await this.repo.markFailed(row.id, e.message);
        this.logger.warn({ relayTxId, nonce, error: e.message }, 'relayer broadcast refused');
        throw e;
      }
    }
    await this.repo.markBroadcast(row.id);
    return txHash;
  }

  /** The first of `hashes` with a receipt, or null. */
  private async minedHash(hashes: string[]): Promise<string | null> {
    for (const h of hashes) if (await this.chain.provider.getTransactionReceipt(h)) return h;
    return null;
  }

  /** Sends a stored signed transaction again; true when the node has it (sent now, earlier, or mined). */
  private async rebroadcast(rawTx: string, txHash: string): Promise<boolean> {
    const provider = this.chain.provider;
    if (await provider.getTransaction(txHash).catch(() => null)) return true;
    try {
      await provider.broadcastTransaction(rawTx);
      return true;
    } catch {
      return (await provider.getTransaction(txHash).catch(() => null)) !== null;
    }
  }
}
