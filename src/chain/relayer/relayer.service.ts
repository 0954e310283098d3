import { InjectQueue } from '@nestjs/bullmq';
import { Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import { ChainTxError, isConfirmed, isNodeError } from '@lib/chain';
import { Queue, QueueEvents } from 'bullmq';
import { formatEther, parseEther, type TransactionReceipt } from 'ethers';
import { v7 as uuidv7 } from 'uuid';
import { AppError } from '../../common/errors/app-error';
import { AppConfig } from '../../config/app-config';
import { TransactionHost, TxHost } from '../../database/transaction';
import { ChainAccess } from '../chain-access.service';
import { RELAYER_QUEUE, RelayerJobData, RelayerJobResult } from './relayer.queue';
import { RelayerRepository, RelayTxRow } from './relayer.repository';
import { relayerBalance, relayerBalanceLow, relayerReplacements } from './relayer-metrics';

/** What to relay: calldata for `to`, a purpose label and a reference (e.g. the payment id) for operators. */
export interface RelayRequest {
  to: string;
  data: string;
  purpose: string;
  reference?: string | null;
}

/** Thrown when the queue did not broadcast within RELAYER_WAIT_MS; the row stays queued and is sent later. */
export class RelayTimeoutError extends Error {
  constructor(readonly relayTxId: string) {
    super(`relayer transaction ${relayTxId} was not broadcast in time`);
  }
}

/**
 * The one way any process sends a relayer transaction (docs/architecture.md §5): a row in
 * relayer_transactions, then a job on the relayer queue (job id = row id, so a retry cannot enqueue
 * it twice), whose processor allocates the nonce in Postgres and broadcasts. {@link relay} waits for
 * the broadcast (not for mining).
 */
@Injectable()
export class RelayerService implements OnApplicationShutdown {
  private readonly logger = new Logger('RelayerService');
  private events?: QueueEvents;

  constructor(
    @InjectQueue(RELAYER_QUEUE) private readonly queue: Queue<RelayerJobData, RelayerJobResult>,
    private readonly repo: RelayerRepository,
    private readonly txHost: TransactionHost,
    private readonly chain: ChainAccess,
    private readonly config: AppConfig,
  ) {}

  /**
   * Relays the intent `req` (`purpose`, `reference`) and waits until it is broadcast. One live relay per
   * intent (DESIGN §22; issue 29 finding 1), the relayer's own rule: when the intent already has a row
   * that has not failed, that row is resumed ({@link resume}: its stored signed bytes, or its queued job)
   * and `req.data` is not used; a new row only when every row of the intent has failed. The partial
   * unique index relayer_transactions_live_intent enforces it against concurrent twins. A request without
   * `reference` is its own intent. Must not be called inside a database transaction.
   * Refused before anything is stored while the relayer's ETH is below RELAYER_MIN_BALANCE (DESIGN §18):
   * a relay is never queued to fail at broadcast for want of gas money.
   * @returns the relayer row id (the live row's, when there was one) and the transaction hash (the first
   *   signed; a replacement may be mined instead: wait with {@link waitMined}).
   * @throws AppError 503 `unavailable` (`details.reason: "relayer_low_balance"`, `Retry-After`) when the
   *   relayer's ETH is below RELAYER_MIN_BALANCE and a new row would be needed; ChainTxError when the call
   *   would revert or the node refused it; RelayTimeoutError after RELAYER_WAIT_MS.
   */
  async relay(req: RelayRequest): Promise<{ relayTxId: string; txHash: string }> {
    const reference = req.reference ?? null;
    for (let attempt = 0; ; attempt++) {
      if (reference !== null) {
        const live = await this.repo.live(req.purpose, reference);
        if (live) {
          this.logger.log({ relayTxId: live.id, purpose: req.purpose, reference }, 'intent already has a live relay; resuming it');
          return this.resume(live.id);
        }
      }
      await this.assertFunded();
      const relayTxId = uuidv7();
      const row = { id: relayTxId, address: this.chain.relayer.address, toAddress: req.to, data: req.data, purpose: req.purpose, reference };
      const inserted = await (this.txHost as TxHost).withTransaction(() => (reference === null ? this.repo.insert(row).then(() => true) : this.repo.insertUnlessLive(row)));
      if (!inserted) {
        // A twin inserted the live row between our read and our insert (or it failed meanwhile): look again.
        if (attempt >= 3) throw new Error(`relay ${req.purpose} ${reference}: no live row and no insert after ${attempt + 1} attempts`);
        continue;
      }
      return this.sendQueued(relayTxId);
    }
  }

  /** Queues the job of the new row `relayTxId` and waits for its broadcast (see {@link relay}). */
  private async sendQueued(relayTxId: string): Promise<{ relayTxId: string; txHash: string }> {
    const events = await this.queueEvents();
    const job = await this.queue.add('send', { relayTxId }, { jobId: relayTxId, removeOnComplete: { age: 3600 }, removeOnFail: { age: 86400 } });
    try {
      const result = await job.waitUntilFinished(events, this.config.env.RELAYER_WAIT_MS);
      return { relayTxId, txHash: result.txHash };
    } catch (err) {
      const row = await this.repo.find(relayTxId);
      if (row?.status === 'broadcast' && row.txHash) return { relayTxId, txHash: row.txHash };
      if (row?.status === 'failed') throw new ChainTxError(row.error ?? 'relay failed', parseErrorName(row.error), [], null, null, { cause: err });
      throw new RelayTimeoutError(relayTxId);
    }
  }

  /**
   * Sends again a relay whose job ended without a broadcast (its process stopped after the recovery
   * point "signed", or the wait timed out): retries the failed job, or queues it again, and waits
   * as {@link relay} does. The sender rebroadcasts the stored signed bytes, so the hash stays the same.
   * Must not be called inside a database transaction.
   * @throws ChainTxError when the relay failed for good; RelayTimeoutError after RELAYER_WAIT_MS.
   */
  async resume(relayTxId: string): Promise<{ relayTxId: string; txHash: string }> {
    const row = await this.repo.find(relayTxId);
    if (!row) throw new Error(`relayer transaction ${relayTxId} does not exist`);
    if (row.status === 'broadcast' && row.txHash) return { relayTxId, txHash: row.txHash };
    if (row.status === 'failed') throw new ChainTxError(row.error ?? 'relay failed', parseErrorName(row.error), [], null, row.txHash);
    const events = await this.queueEvents();
    let job = await this.queue.getJob(relayTxId);
    if (!job) job = await this.queue.add('send', { relayTxId }, { jobId: relayTxId, removeOnComplete: { age: 3600 }, removeOnFail: { age: 86400 } });
    else if (await job.isFailed()) await job.retry('failed');
    try {
      const result = await job.waitUntilFinished(events, this.config.env.RELAYER_WAIT_MS);
      return { relayTxId, txHash: result.txHash };
    } catch (err) {
      const after = await this.repo.find(relayTxId);
      if (after?.status === 'broadcast' && after.txHash) return { relayTxId, txHash: after.txHash };
      if (after?.status === 'failed') throw new ChainTxError(after.error ?? 'relay failed', parseErrorName(after.error), [], null, after.txHash, { cause: err });
      throw new RelayTimeoutError(relayTxId);
    }
  }

  /**
   * The relayer's address and ETH balance (decimal ETH), and whether it is at least RELAYER_MIN_BALANCE;
   * sets the `relayer_balance_wei` and `relayer_balance_low` gauges.
   */
  async balance(): Promise<{ address: string; balance: string; ok: boolean }> {
    const address = this.chain.relayer.address;
    const wei = await this.chain.read('relayer balance', () => this.chain.provider.getBalance(address));
    const ok = wei >= parseEther(this.config.env.RELAYER_MIN_BALANCE);
    relayerBalance.set({ address }, Number(wei));
    relayerBalanceLow.set({ address }, ok ? 0 : 1);
    return { address, balance: formatEther(wei), ok };
  }

  /**
   * Refuses work while the relayer cannot pay for gas (DESIGN §18: 503 `unavailable` before the balance
   * runs out, not after a failed broadcast).
   * @throws AppError 503 unavailable with `details.reason: "relayer_low_balance"` and `Retry-After: 30`.
   */
  async assertFunded(): Promise<void> {
    const b = await this.balance();
    if (!b.ok) {
      throw new AppError(
        'unavailable',
        'The service cannot send transactions right now (its relayer is low on gas money); nothing was submitted, retry later',
        { reason: 'relayer_low_balance' },
        503,
        { 'Retry-After': '30' },
      );
    }
  }

  /**
   * Waits, at most `timeoutMs`, until one of the hashes the relay signed (its first send, fee bumps,
   * re-signs; DESIGN §18) is mined and confirmed by the one rule (`head − CONFIRMATIONS ≥ block`).
   * Polls the chain itself for every stored hash, so it does not depend on the worker's tender.
   * Must not be called inside a database transaction.
   * @returns the receipt of the mined hash (status 0 when it reverted), or null when the time ran out
   *   (still pending: never report that as failed; a poll the node failed counts as not mined yet).
   * @throws ChainTxError when the relay failed for good (refused, or its nonce was used by its fill).
   */
  async waitMined(relayTxId: string, timeoutMs: number): Promise<TransactionReceipt | null> {
    const deadline = Date.now() + timeoutMs;
    const provider = this.chain.provider;
    for (;;) {
      const row = await this.repo.find(relayTxId);
      if (!row) throw new Error(`relayer transaction ${relayTxId} does not exist`);
      const hashes = row.minedTxHash ? [row.minedTxHash] : row.txHashes;
      try {
        for (const h of hashes) {
          const receipt = await provider.getTransactionReceipt(h);
          if (receipt && isConfirmed(receipt.blockNumber, await provider.getBlockNumber(), this.config.env.CONFIRMATIONS)) return receipt;
        }
      } catch (err) {
        // A poll the node failed is "not mined yet" (DESIGN §22); the wait stays bounded by its deadline.
        if (!isNodeError(err)) throw err;
      }
      if (row.status === 'failed') throw new ChainTxError(row.error ?? 'relay failed', parseErrorName(row.error), [], null, row.txHash);
      if (Date.now() >= deadline) return null;
      await new Promise((r) => setTimeout(r, Math.min(this.config.env.CHAIN_POLL_MS, 200)));
    }
  }

  /**
   * The one resend of a relay whose transaction the node may have dropped (DESIGN §18 "Relayer"), used by
   * the pay-page relay route (§16, §18) and by the worker's tender: when the node knows none of the row's
   * hashes, its current signed bytes are handed to the node again — same nonce, same hash, so this can
   * never send the payload twice and is safe from any process — and the bump clock restarts. It never
   * signs anything: a refused resend (e.g. fees below today's base fee) is left to the tender, which
   * replaces or fills the nonce. Must not be called inside a database transaction.
   * @param relay the row id, or the row as the tender already read it.
   * @returns null when the relayer does not carry the relay (unknown id or failed row: the caller decides);
   *   else `outcome` `known` (the node has one of its hashes: `txHash`), `resent` (`txHash` the stored
   *   bytes' hash) or `refused` (the node took nothing; `txHash` the row's newest signed hash, if any).
   */
  async resendDropped(relay: string | RelayTxRow): Promise<{ outcome: 'known' | 'resent' | 'refused'; txHash: string | null } | null> {
    const row = typeof relay === 'string' ? await this.repo.find(relay) : relay;
    if (!row || row.status === 'failed') return null;
    const provider = this.chain.provider;
    for (const hash of row.txHashes) if (await provider.getTransaction(hash).catch(() => null)) return { outcome: 'known', txHash: hash };
    const newest = row.txHashes.at(-1) ?? row.txHash;
    if (!row.rawTx || !row.txHash) return { outcome: 'refused', txHash: newest };
    try {
      await provider.broadcastTransaction(row.rawTx);
    } catch (err) {
      this.logger.warn({ relayTxId: row.id, nonce: row.nonce, error: (err as Error).message }, 'stored relayer bytes refused by the node');
      return { outcome: 'refused', txHash: newest };
    }
    await (this.txHost as TxHost).withTransaction(() => this.repo.touchSent(row.id));
    this.logger.warn({ relayTxId: row.id, nonce: row.nonce, txHash: row.txHash }, 'relayer transaction dropped by the node; resent its signed bytes');
    relayerReplacements.inc({ kind: 'resent' });
    return { outcome: 'resent', txHash: row.txHash };
  }

  /**
   * Every transaction hash the relayer signed for the relays of `reference` (e.g. a payment id) with
   * one of `purposes`: first sends and every fee-bump or re-signed replacement (DESIGN §18 "Relayer":
   * the relayer's rows are the one list of a relay's hashes; callers waiting for a receipt consult it,
   * never a copy). Must not be called inside a database transaction.
   * @returns the hashes, oldest first (empty when nothing was signed yet).
   */
  signedHashes(reference: string, purposes: readonly string[]): Promise<string[]> {
    return this.repo.hashesFor(reference, purposes);
  }

  /**
   * The relays queued for one caller's record (`purpose`, `reference`), newest first: their ids and
   * statuses, so the caller resumes a live one instead of relaying its payload again (DESIGN §18).
   */
  relaysFor(purpose: string, reference: string): Promise<Array<{ id: string; status: 'queued' | 'broadcast' | 'failed' }>> {
    return this.repo.forReference(purpose, reference);
  }

  /**
   * The live relay (status not failed) of the intent (`purpose`, `reference`), or null (DESIGN §22):
   * its id, status and whether one of its hashes is mined with status 1 and confirmed by the one rule
   * (`head − CONFIRMATIONS ≥ block`, DESIGN §18) — the tender's record (its block confirmed), else a
   * receipt read now (the tender records a mined hash only on its next pass; a caller that starts a new
   * intent once the last one is mined must not wait for that bookkeeping). A receipt at the head only,
   * or a reverted one (the tender fails that row on its next pass), is not mined (review F5).
   * @throws ChainUnavailableError when the node fails a read.
   */
  async liveRelay(purpose: string, reference: string): Promise<{ id: string; status: 'queued' | 'broadcast'; mined: boolean } | null> {
    const row = await this.repo.live(purpose, reference);
    if (!row) return null;
    const live = { id: row.id, status: row.status as 'queued' | 'broadcast' };
    if (row.txHashes.length === 0) return { ...live, mined: false };
    const head = await this.chain.read('head block', () => this.chain.provider.getBlockNumber());
    const confirmed = (block: number) => isConfirmed(block, head, this.config.env.CONFIRMATIONS);
    // A live row's recorded hash succeeded: the tender fails a row whose mined hash reverted, in the same transaction.
    if (row.minedTxHash !== null && row.minedBlock !== null && confirmed(row.minedBlock)) return { ...live, mined: true };
    for (const h of row.txHashes) {
      const receipt = await this.chain.read('relay receipt', () => this.chain.provider.getTransactionReceipt(h));
      if (receipt && receipt.status === 1 && confirmed(receipt.blockNumber)) return { ...live, mined: true };
    }
    return { ...live, mined: false };
  }

  /** Every transaction hash signed for a caller's record (`purpose`, `reference`), fee-bump replacements included (DESIGN §18). */
  hashesFor(purpose: string, reference: string): Promise<string[]> {
    return this.repo.hashesForReference(purpose, reference);
  }

  /**
   * The `traceparent` each of `txHashes` was queued under by this relayer (DESIGN §20: the request
   * that submitted it), keyed by lower-case hash; hashes it did not send, or sent untraced, are absent.
   * The escrow indexer continues those traces (the rows are this module's).
   */
  relayTraceparents(txHashes: string[]): Promise<Map<string, string>> {
    return this.repo.relayTraceparents(txHashes);
  }

  private async queueEvents(): Promise<QueueEvents> {
    if (!this.events) {
      const env = this.config.env;
      this.events = new QueueEvents(RELAYER_QUEUE, { connection: { url: env.REDIS_URL, maxRetriesPerRequest: null }, prefix: env.REDIS_PREFIX });
      await this.events.waitUntilReady();
    }
    return this.events;
  }

  async onApplicationShutdown(): Promise<void> {
    await this.events?.close();
  }
}

function parseErrorName(message: string | null): string | null {
  const m = message?.match(/: ([A-Za-z0-9_]+)\(/);
  return m ? m[1] : null;
}
