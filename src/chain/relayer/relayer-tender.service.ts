import { Injectable, Logger } from '@nestjs/common';
import { toTxError } from '@lib/chain';
import { isError, parseEther, parseUnits, Transaction, type TransactionReceipt } from 'ethers';
import { v7 as uuidv7 } from 'uuid';
import { AppConfig } from '../../config/app-config';
import { TransactionHost, TxHost } from '../../database/transaction';
import { ChainAccess } from '../chain-access.service';
import { RelayerRepository, RelayTxRow } from './relayer.repository';
import { judgedByChain } from './relay-errors';
import { RelayIntentChecks } from './relay-intent-check';
import { RelayerService } from './relayer.service';
import { relayerBalance, relayerBalanceLow, relayerReplacements } from './relayer-metrics';

/** How often the worker's tender refreshes the relayer balance gauges (for alerting without API traffic). */
const BALANCE_EVERY_MS = 15_000;

/** EIP-1559 fees of one transaction, in wei. */
export interface Fees {
  maxFeePerGas: bigint;
  maxPriorityFeePerGas: bigint;
}

/** What one {@link RelayerTender.tend} pass did. */
export interface TendReport {
  mined: number;
  bumped: number;
  resent: number;
  filled: number;
  lost: number;
  /** Rows recorded as mined whose transaction a reorg removed (then tended as unmined in the same pass). */
  reorged: number;
}

/**
 * How many blocks below head a mined row stays watched for reorgs when the node has no `finalized`
 * block tag; with the tag the watch ends at the node's finalized block (anvil: head − 64).
 */
const REORG_WATCH_BLOCKS = 64;

/** The smallest raise the node takes for a replacement at the same nonce: +12.5 % on both fees (geth/reth/anvil txpool rule). */
const BUMP_NUM = 1125n;
const BUMP_DEN = 1000n;
const raise = (wei: bigint) => (wei * BUMP_NUM + BUMP_DEN - 1n) / BUMP_DEN + (wei === 0n ? 1n : 0n);

/**
 * Fees of a replacement of `prev` (DESIGN §18 "Relayer"): the node's current fees or `prev` + 12.5 %,
 * whichever is higher, on both maxFeePerGas and maxPriorityFeePerGas; maxFeePerGas is capped at `cap`
 * (RELAYER_MAX_FEE_GWEI in wei) and the tip at maxFeePerGas.
 * @returns the fees, or null when the cap leaves no room for the +12.5 % the node requires (a
 *   replacement below it would be refused as underpriced).
 */
export function replacementFees(prev: Fees, node: Fees, cap: bigint): Fees | null {
  const minFee = raise(prev.maxFeePerGas);
  const minTip = raise(prev.maxPriorityFeePerGas);
  let maxFeePerGas = node.maxFeePerGas > minFee ? node.maxFeePerGas : minFee;
  let maxPriorityFeePerGas = node.maxPriorityFeePerGas > minTip ? node.maxPriorityFeePerGas : minTip;
  if (maxFeePerGas > cap) maxFeePerGas = cap;
  if (maxPriorityFeePerGas > maxFeePerGas) maxPriorityFeePerGas = maxFeePerGas;
  if (maxFeePerGas < minFee || maxPriorityFeePerGas < minTip) return null;
  return { maxFeePerGas, maxPriorityFeePerGas };
}

/**
 * Keeps the relayer key's broadcast transactions moving on a chain that behaves like a public one
 * (DESIGN §18 "Relayer", docs/architecture.md §5). Runs only inside the relayer queue (its `tend`
 * job, and {@link RelayerSender} before it allocates over a gap), so it never races a send. For each
 * row recorded as mined in a block not yet final (above the node's `finalized` block and within
 * CONFIRMATIONS of head): when none of its hashes has a receipt any more, a reorg removed it and the
 * row is unmined again (its mined hash and block cleared), so it is tended below like any other; a
 * receipt in another block is recorded. Then for each broadcast row not known to be mined, lowest
 * nonce first:
 * - one of its hashes has a receipt → that hash and block are recorded; a reverted one also fails the
 *   row, so its intent may relay again (DESIGN §22 "One live relay per intent");
 * - its nonce is used but none of its hashes was mined (its fill, or a send outside the queue, took
 *   it) → the row is failed: its payload did not run and never will under that nonce;
 * - the node knows none of its hashes (dropped) → its stored signed bytes are sent again; when its call
 *   would now revert (the authorization was used or expired meanwhile) and its purpose's
 *   {@link RelayIntentCheck} confirms it dead by a read (a purpose without a check: the revert alone),
 *   the nonce is filled with a 0-value self-transfer instead, so later nonces are not stuck behind a gap;
 * - not mined RELAYER_BUMP_AFTER_S after its last send → replaced at the same nonce with
 *   {@link replacementFees}; every signed hash stays on the row.
 */
@Injectable()
export class RelayerTender {
  private readonly logger = new Logger('RelayerTender');
  private balanceAt = 0;

  constructor(
    private readonly chain: ChainAccess,
    private readonly repo: RelayerRepository,
    private readonly txHost: TransactionHost,
    private readonly config: AppConfig,
    private readonly relays: RelayerService,
    private readonly checks: RelayIntentChecks,
  ) {}

  /** RELAYER_MAX_FEE_GWEI in wei. */
  get feeCap(): bigint {
    return parseUnits(this.config.env.RELAYER_MAX_FEE_GWEI, 'gwei');
  }

  /**
   * EIP-1559 fees for a new transaction from the node: ethers getFeeData (the latest block's base fee × 2
   * plus the node's suggested tip), raised to the pending block's base fee × 2 plus the tip when that is
   * higher (the block the transaction can enter first; a node refuses a maxFeePerGas below its base
   * fee, EIP-1559), maxFeePerGas capped at RELAYER_MAX_FEE_GWEI and the tip at maxFeePerGas.
   */
  async fees(): Promise<Fees> {
    const cap = this.feeCap;
    const provider = this.chain.provider;
    const [data, pending] = await Promise.all([provider.getFeeData(), provider.getBlock('pending').catch(() => null)]);
    let maxFeePerGas = data.maxFeePerGas ?? data.gasPrice ?? cap;
    let maxPriorityFeePerGas = data.maxPriorityFeePerGas ?? 0n;
    const nextBase = pending?.baseFeePerGas;
    if (nextBase != null && nextBase * 2n + maxPriorityFeePerGas > maxFeePerGas) maxFeePerGas = nextBase * 2n + maxPriorityFeePerGas;
    if (maxFeePerGas > cap) maxFeePerGas = cap;
    if (maxPriorityFeePerGas > maxFeePerGas) maxPriorityFeePerGas = maxFeePerGas;
    return { maxFeePerGas, maxPriorityFeePerGas };
  }

  /** One pass over the relayer key's unmined rows (see the class comment). */
  async tend(): Promise<TendReport> {
    const report: TendReport = { mined: 0, bumped: 0, resent: 0, filled: 0, lost: 0, reorged: 0 };
    const address = this.chain.relayer.address;
    if (Date.now() - this.balanceAt >= BALANCE_EVERY_MS) {
      this.balanceAt = Date.now();
      const wei = await this.chain.provider.getBalance(address);
      relayerBalance.set({ address }, Number(wei));
      relayerBalanceLow.set({ address }, wei >= parseEther(this.config.env.RELAYER_MIN_BALANCE) ? 0 : 1);
    }
    await this.recheckMined(report);
    const rows = await this.repo.unmined(address);
    if (rows.length === 0) return report;
    const latest = await this.chain.provider.getTransactionCount(address, 'latest');
    const bumpAfterMs = this.config.env.RELAYER_BUMP_AFTER_S * 1000;
    for (const row of rows) {
      const receipt = await this.minedReceipt(row.txHashes);
      if (receipt) {
        await this.tx(async () => {
          await this.repo.markMined(row.id, receipt.hash, receipt.blockNumber);
          // A mined revert ends the row (its payload ran and failed): the intent may relay again (DESIGN §22).
          if (receipt.status === 0) await this.repo.markFailed(row.id, `reverted in ${receipt.hash}`);
        });
        report.mined++;
        continue;
      }
      if (row.nonce! < latest) {
        const by = row.filledBy ? `its fill ${row.filledBy}` : 'a transaction not on this row';
        this.logger.warn({ relayTxId: row.id, nonce: row.nonce, txHashes: row.txHashes }, `relayer nonce used by ${by}; the row's payload did not run`);
        await this.tx(() => this.repo.markFailed(row.id, `nonce ${row.nonce} used by ${by}`));
        report.lost++;
        continue;
      }
      if (row.filledBy) continue; // its fill row is tended on its own
      if (!(await this.anyKnown(row.txHashes))) {
        const outcome = await this.revive(row);
        if (outcome) report[outcome]++;
        continue;
      }
      if (row.sentAt && Date.now() - row.sentAt.getTime() >= bumpAfterMs) {
        if (await this.bump(row)) report.bumped++;
      }
    }
    return report;
  }

  /**
   * Re-examines the rows recorded as mined in blocks that are not final (DESIGN §18 "Confirmations":
   * nothing is final before `head − CONFIRMATIONS`, and a reorg deeper than that is still undone, not
   * lost): the node's `finalized` block, never above head − CONFIRMATIONS, or head − 64 without the tag.
   * A row none of whose hashes has a receipt is unmined again (the caller's pass resends its stored
   * bytes, same nonce and hash, or fills its nonce when its call would now revert); a receipt in another
   * block (the node re-included it) is recorded.
   */
  private async recheckMined(report: TendReport): Promise<void> {
    const provider = this.chain.provider;
    const head = await provider.getBlockNumber();
    const finalized = await provider.getBlock('finalized').catch(() => null);
    const byRule = head - this.config.env.CONFIRMATIONS;
    const finalBlock = finalized ? Math.min(finalized.number, byRule) : Math.min(head - REORG_WATCH_BLOCKS, byRule);
    for (const row of await this.repo.minedAfter(this.chain.relayer.address, finalBlock)) {
      const receipt = await this.minedReceipt(row.txHashes);
      if (receipt) {
        if (receipt.hash !== row.minedTxHash || receipt.blockNumber !== row.minedBlock) await this.tx(() => this.repo.markMined(row.id, receipt.hash, receipt.blockNumber));
        continue;
      }
      this.logger.warn({ relayTxId: row.id, nonce: row.nonce, txHash: row.minedTxHash, block: row.minedBlock }, 'relayer transaction removed from the chain by a reorg; tended again');
      await this.tx(() => this.repo.markUnmined(row.id));
      relayerReplacements.inc({ kind: 'reorged' });
      report.reorged++;
    }
  }

  /**
   * Before the sender allocates a nonce above `nonce` while the node knows no transaction at `nonce`:
   * revives the unmined row that holds it, if there is one (after re-checking the rows recorded as
   * mined, so a row a reorg took off the chain counts as unmined).
   * @returns true when a row held the nonce (resent or filled), false when none does (a reset local
   *   chain, or nonces handed out but never signed): the caller then allocates from the node's count.
   */
  async repairAt(nonce: number): Promise<boolean> {
    // A row recorded as mined may hold the nonce after a reorg no pass has seen yet: re-check those first.
    await this.recheckMined({ mined: 0, bumped: 0, resent: 0, filled: 0, lost: 0, reorged: 0 });
    const row = (await this.repo.unmined(this.chain.relayer.address)).find((r) => r.nonce === nonce && !r.filledBy);
    if (!row) return false;
    return (await this.revive(row)) !== null;
  }

  /**
   * A dropped row: resend its bytes ({@link RelayerService.resendDropped}, the one resend path) while its
   * call still succeeds, a replacement when the node refuses them, else fill its nonce.
   */
  private async revive(row: RelayTxRow): Promise<'resent' | 'filled' | null> {
    const provider = this.chain.provider;
    let dead = false;
    try {
      await provider.estimateGas({ from: this.chain.relayer.address, to: row.toAddress, data: row.data });
    } catch (err) {
      // Revert data only (issue 29 finding 3): ethers reports any JSON-RPC error of eth_estimateGas as CALL_EXCEPTION.
      dead = isError(err, 'CALL_EXCEPTION') && judgedByChain(toTxError('revive', err, null));
      if (!dead) {
        this.logger.warn({ relayTxId: row.id, error: (err as Error).message }, 'cannot check a dropped relayer transaction now; next pass');
        return null;
      }
      // Revert data alone is not proof (issue 29 finding 3): the node estimates against its pending block,
      // where this row's own bytes may sit already. The intent's check reads the chain at head − CONFIRMATIONS.
      const verdict = await this.checks.judge(row);
      if (verdict === 'unknown') {
        this.logger.warn({ relayTxId: row.id, purpose: row.purpose }, 'dropped relayer transaction reverts in an estimate but a read cannot decide; next pass');
        return null;
      }
      dead = verdict !== 'usable';
    }
    if (!dead && row.rawTx) {
      // The same resend the pay-page route uses (RelayerService.resendDropped): same bytes, same hash.
      const resent = await this.relays.resendDropped(row);
      if (resent && resent.outcome !== 'refused') return 'resent';
      // The stored bytes no longer pass the node's checks (e.g. a fee cap below today's base fee): sign anew.
      return (await this.bump(row, true)) ? 'resent' : null;
    }
    return (await this.fill(row)) ? 'filled' : null;
  }

  /** Replaces `row`'s transaction at its nonce with higher fees; the new hash joins the row before it is sent. */
  private async bump(row: RelayTxRow, force = false): Promise<boolean> {
    if (!row.rawTx || !row.txHash) return false;
    const prev = Transaction.from(row.rawTx);
    const fees = replacementFees({ maxFeePerGas: prev.maxFeePerGas ?? 0n, maxPriorityFeePerGas: prev.maxPriorityFeePerGas ?? 0n }, await this.fees(), this.feeCap);
    if (!fees) {
      if (!force) this.logger.warn({ relayTxId: row.id, nonce: row.nonce, cap: this.config.env.RELAYER_MAX_FEE_GWEI }, 'relayer transaction not mined and its fees are at RELAYER_MAX_FEE_GWEI; not replaced');
      return false;
    }
    const rawTx = await this.chain.relayer.signTransaction({
      to: prev.to,
      data: prev.data,
      value: prev.value,
      nonce: prev.nonce,
      gasLimit: prev.gasLimit,
      chainId: prev.chainId,
      type: 2,
      ...fees,
    });
    const txHash = Transaction.from(rawTx).hash!;
    await this.tx(() => this.repo.markReplaced(row.id, txHash, rawTx));
    try {
      await this.chain.provider.broadcastTransaction(rawTx);
    } catch (err) {
      if (!(await this.chain.provider.getTransaction(txHash).catch(() => null))) {
        await this.tx(() => this.repo.restoreCurrent(row.id, row.txHash!, row.rawTx!));
        this.logger.warn({ relayTxId: row.id, nonce: row.nonce, error: (err as Error).message }, 'relayer replacement refused by the node');
        return false;
      }
    }
    this.logger.warn({ relayTxId: row.id, nonce: row.nonce, from: row.txHash, to: txHash, maxFeePerGas: String(fees.maxFeePerGas) }, 'relayer transaction replaced with higher fees');
    relayerReplacements.inc({ kind: 'bumped' });
    return true;
  }

  /** Fills a dead row's nonce with a 0-value transfer to the relayer itself, priced to replace whatever is left of it. */
  private async fill(row: RelayTxRow): Promise<boolean> {
    const wallet = this.chain.relayer;
    const node = await this.fees();
    const prev = row.rawTx ? Transaction.from(row.rawTx) : null;
    const fees = prev ? (replacementFees({ maxFeePerGas: prev.maxFeePerGas ?? 0n, maxPriorityFeePerGas: prev.maxPriorityFeePerGas ?? 0n }, node, this.feeCap) ?? node) : node;
    const rawTx = await wallet.signTransaction({ to: wallet.address, value: 0n, data: '0x', nonce: row.nonce!, gasLimit: 21_000n, chainId: this.chain.chainId, type: 2, ...fees });
    const txHash = Transaction.from(rawTx).hash!;
    const fillId = uuidv7();
    await this.tx(() => this.repo.insertFill(row, fillId, txHash, rawTx));
    try {
      await this.chain.provider.broadcastTransaction(rawTx);
    } catch (err) {
      this.logger.error({ relayTxId: row.id, fillId, nonce: row.nonce, error: (err as Error).message }, 'relayer nonce fill refused by the node; its row is tended (resent) like any other');
    }
    this.logger.warn({ relayTxId: row.id, nonce: row.nonce, fillId, txHash }, 'dropped relayer transaction would now revert; its nonce is filled with a 0-value self-transfer');
    relayerReplacements.inc({ kind: 'filled' });
    return true;
  }

  private async minedReceipt(hashes: string[]): Promise<TransactionReceipt | null> {
    for (const h of hashes) {
      const r = await this.chain.provider.getTransactionReceipt(h);
      if (r) return r;
    }
    return null;
  }

  private async anyKnown(hashes: string[]): Promise<boolean> {
    for (const h of hashes) if (await this.chain.provider.getTransaction(h)) return true;
    return false;
  }

  private tx<T>(fn: () => Promise<T>): Promise<T> {
    return (this.txHost as TxHost).withTransaction(fn);
  }
}
