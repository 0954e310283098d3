import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { isNodeError, lastConfirmedBlock } from '@lib/chain';
import { AppConfig } from '../../config/app-config';
import { TransactionHost, TxHost } from '../../database/transaction';
import { ChainAccess } from '../../chain/chain-access.service';
import { AUTHORIZATION_CURSOR, ChainCursors } from '../../chain/chain-cursors.repository';
import { PaymentsRepository } from './payments.repository';
import { PaymentsService } from './payments.service';
import { X402SettlementsRepository } from './x402-settlements.repository';
import { BalanceProjector, type BalanceMovement } from '../balance/balance-projector.service';

/** Cursor name in chain_cursors for USDC authorization logs (shared with the agents' balance read). */
export { AUTHORIZATION_CURSOR };
const MAX_BLOCKS_PER_PASS = 2000;
/** Blocks read again below head after a reorg when the node has no `finalized` block tag. */
const REORG_REREAD_BLOCKS = 64;

/**
 * Settles agent payments from the chain (docs/architecture.md §13): {@link pollOnce} reads USDC
 * AuthorizationUsed / AuthorizationCanceled logs from a cursor in Postgres, CONFIRMATIONS behind head,
 * and marks the matching payment succeeded (with the transaction that used it, whoever sent it) or
 * failed (cancelled), and likewise the x402 settlement of our own challenges keyed by the same
 * (payer, nonce) (§18); {@link sweepOnce} resumes payments idle for PAYMENT_SWEEP_IDLE_SECONDS (re-relay,
 * or failed once chain time is past validBefore with the authorization unused).
 */
@Injectable()
export class PaymentSettlement implements OnModuleInit {
  private readonly logger = new Logger('PaymentSettlement');

  constructor(
    private readonly chain: ChainAccess,
    private readonly cursors: ChainCursors,
    private readonly repo: PaymentsRepository,
    private readonly x402: X402SettlementsRepository,
    private readonly payments: PaymentsService,
    private readonly txHost: TransactionHost,
    private readonly config: AppConfig,
    private readonly balance: BalanceProjector,
  ) {}

  /** Registers the relayed payments' and x402 settlements' rule with the ledger's reconciliation (DESIGN §21). */
  onModuleInit(): void {
    this.balance.registerSource('authorization', (organizationId, fromBlock, toBlock) => this.movementsIn(organizationId, fromBlock, toBlock));
  }

  /**
   * The `payment` and `x402` movements of `organizationId` in blocks `[fromBlock, toBlock]` as this
   * indexer derives them ({@link ledgerMovements}), read in windows of MAX_BLOCKS_PER_PASS blocks, no
   * further than its cursor (reconciliation; no transaction).
   */
  private async movementsIn(organizationId: string, fromBlock: number, toBlock: number): Promise<BalanceMovement[]> {
    const last = Math.min(toBlock, (await this.cursors.read(AUTHORIZATION_CURSOR)) ?? -1);
    const out: BalanceMovement[] = [];
    for (let start = fromBlock; start <= last; start += MAX_BLOCKS_PER_PASS) {
      const logs = await this.chain.usdc.getAuthorizationLogs(start, Math.min(last, start + MAX_BLOCKS_PER_PASS - 1));
      out.push(...(await this.ledgerMovements(logs)).filter((m) => m.organizationId === organizationId));
    }
    return out;
  }

  /**
   * One indexer pass. Before reading, the hash stored with the cursor is compared with the chain's
   * block at that height: when they differ (a reorg deeper than CONFIRMATIONS replaced blocks already
   * read; DESIGN §18 "Confirmations"), the pass reads again from the node's `finalized` block (head − 64
   * without the tag), so a transfer the reorg moved to a block at or below the cursor still settles its
   * payment. Re-reading is harmless: a use or cancel already recorded changes nothing.
   *
   * Reorgs unwind (DESIGN §22; issue 29 finding 4): in the transaction that applies blocks
   * `fromBlock..toBlock`, a payment (x402 settlement) recorded as used in those blocks whose use the
   * chain's logs of that range no longer show goes back to `submitted` (`pending`) with its transaction
   * forgotten, before the logs are applied; after a rewind, every use recorded above the rewind block is
   * re-derived so (a use above the confirmed head is not confirmed on the new chain). Such a payment
   * counts against the float and the policy again; the relayer's tender resends its reorged
   * transaction and the sweep resumes it; the pass that reads the transfer again marks it succeeded.
   * @returns the blocks read, how many payments changed, the ids of payments and x402 settlements taken
   *   back (`unwound`), and the block the cursor was rewound to after a reorg.
   */
  async pollOnce(): Promise<{ fromBlock: number; toBlock: number; succeeded: number; failed: number; unwound: string[]; rewoundTo?: number }> {
    const tip = await this.chain.provider.getBlockNumber();
    const head = lastConfirmedBlock(tip, this.config.env.CONFIRMATIONS);
    const mark = await this.cursors.readMark(AUTHORIZATION_CURSOR);
    let cursor = mark ? mark.blockNumber : this.config.env.ESCROW_DEPLOY_BLOCK - 1;
    let rewoundTo: number | undefined;
    if (mark?.blockHash && (await this.chain.clock.getBlockHash(cursor)) !== mark.blockHash) {
      const finalized = await this.chain.provider.getBlock('finalized').catch(() => null);
      rewoundTo = Math.max(this.config.env.ESCROW_DEPLOY_BLOCK - 1, Math.min(cursor, finalized ? finalized.number : tip - REORG_REREAD_BLOCKS) );
      this.logger.error({ cursor, rewoundTo, cursorName: AUTHORIZATION_CURSOR }, 'chain reorg below the authorization cursor; reading again from the finalized block');
      cursor = rewoundTo;
      await this.cursors.rewind(AUTHORIZATION_CURSOR, cursor);
    }
    const fromBlock = cursor + 1;
    if (fromBlock > head) {
      // Nothing confirmed to read yet; after a rewind, what the old branch recorded above it is not confirmed either.
      const unwound = rewoundTo === undefined ? [] : await (this.txHost as TxHost).withTransaction(() => this.unwind(fromBlock, Number.MAX_SAFE_INTEGER, []));
      return { fromBlock, toBlock: fromBlock - 1, succeeded: 0, failed: 0, unwound, rewoundTo };
    }
    const toBlock = Math.min(head, fromBlock + MAX_BLOCKS_PER_PASS - 1);
    const toHash = await this.chain.clock.getBlockHash(toBlock);
    const logs = await this.chain.usdc.getAuthorizationLogs(fromBlock, toBlock);
    // A reorg while reading: leave the cursor where it was; the next pass reads the new blocks.
    if (!toHash || (await this.chain.clock.getBlockHash(toBlock)) !== toHash) return { fromBlock, toBlock: fromBlock - 1, succeeded: 0, failed: 0, unwound: [], rewoundTo };
    let succeeded = 0;
    let failed = 0;
    const stillUsed = logs.filter((l) => l.kind === 'used').map((l) => `${l.authorizer.toLowerCase()}:${l.nonce.toLowerCase()}`);
    const ledger = await this.balance.resolve(await this.ledgerMovements(logs));
    const unwound = await (this.txHost as TxHost).withTransaction(async () => {
      const back = await this.unwind(fromBlock, rewoundTo === undefined ? toBlock : Number.MAX_SAFE_INTEGER, stillUsed);
      await this.balance.record(ledger);
      for (const log of logs) {
        if (log.kind === 'used') {
          if (await this.recordUse(log.authorizer, log.nonce, log.txHash, log.blockNumber)) succeeded++;
        } else {
          await this.x402.markCancelled(log.authorizer, log.nonce);
          if (await this.repo.markCanceled(log.authorizer, log.nonce)) failed++;
        }
      }
      await this.cursors.advance(AUTHORIZATION_CURSOR, toBlock, toHash);
      return back;
    });
    return { fromBlock, toBlock, succeeded, failed, unwound, rewoundTo };
  }

  /**
   * Takes back the uses recorded in blocks `fromBlock..toBlock` that `stillUsed` (`authorizer:nonce`,
   * lower case: the chain's AuthorizationUsed logs of that range) no longer holds. Inside the pass's transaction.
   * @returns the payment and x402 settlement ids taken back (logged).
   */
  private async unwind(fromBlock: number, toBlock: number, stillUsed: string[]): Promise<string[]> {
    const payments = await this.repo.unwindUses(fromBlock, toBlock, stillUsed);
    const settlements = await this.x402.unwindSettled(fromBlock, toBlock, stillUsed);
    if (payments.length || settlements.length) {
      this.logger.error({ fromBlock, toBlock, paymentIds: payments, x402SettlementIds: settlements }, 'recorded authorization uses no longer on chain (reorg): back to submitted/pending, to be resumed');
    }
    return [...payments, ...settlements];
  }

  /**
   * The ledger movements of used authorizations (DESIGN §21): agent payments to an organisation
   * (`payment`; an agent's x402 payment of our own challenge is `x402`) and paid retries of our own
   * challenges (`x402`).
   */
  private async ledgerMovements(logs: ReadonlyArray<{ kind: string; authorizer: string; nonce: string; txHash: string; logIndex: number }>): Promise<BalanceMovement[]> {
    const used = logs.filter((l) => l.kind === 'used');
    const key = (authorizer: string, nonce: string) => `${authorizer.toLowerCase()}:${nonce.toLowerCase()}`;
    const byAuth = new Map(used.map((l) => [key(l.authorizer, l.nonce), l]));
    const base = (id: string, a: string, n: string) => ({ sourceId: id, cursor: AUTHORIZATION_CURSOR, txHash: byAuth.get(key(a, n))!.txHash, eventLogIndex: byAuth.get(key(a, n))!.logIndex, from: a });
    const payments = (await this.repo.paymentsToOrganizations(used)).map((p) => ({ type: p.mode === 'x402' ? ('x402' as const) : ('payment' as const), organizationId: p.organizationId, sourceType: 'payment', ...base(p.id, p.fromAddress, p.nonce), to: p.toAddress }));
    const x402 = (await this.x402.settlementsToOrganizations(used)).map((x) => ({ type: 'x402' as const, organizationId: x.organizationId, sourceType: 'x402_settlement', ...base(x.id, x.payer, x.nonce), to: x.payTo }));
    return [...payments, ...x402];
  }

  /**
   * Waits at most `waitMs` (bounded; 0 = look once) for one of `txHashes` to be mined with a successful
   * receipt carrying USDC `AuthorizationUsed(authorizer, nonce)`, at the confirmation depth
   * (docs/architecture.md §18: `head − CONFIRMATIONS ≥ its block`), and records the use as the indexer
   * would (payment succeeded, x402 settlement settled). Must not be called inside a database transaction.
   * A poll the node failed (DESIGN §22: timeout, a block out of range after a reorg…) counts as "not seen
   * this time": the wait goes on to its deadline, so the caller answers the state as it stands.
   * @returns the hash that used the authorization, or null when none did within the wait (still pending: not failed).
   */
  async confirmUse(authorizer: string, nonce: string, txHashes: readonly string[], waitMs: number): Promise<string | null> {
    const deadline = Date.now() + waitMs;
    const provider = this.chain.provider;
    for (;;) {
      let used: { hash: string; block: number } | null = null;
      try {
        const head = await provider.getBlockNumber();
        for (const hash of txHashes) {
          const receipt = await provider.getTransactionReceipt(hash);
          if (!receipt || receipt.status !== 1 || receipt.blockNumber > head - this.config.env.CONFIRMATIONS) continue;
          const logs = await this.chain.usdc.getAuthorizationLogs(receipt.blockNumber, receipt.blockNumber, authorizer);
          if (logs.some((l) => l.kind === 'used' && l.nonce === nonce.toLowerCase() && l.txHash === hash)) {
            used = { hash, block: receipt.blockNumber };
            break;
          }
        }
      } catch (err) {
        if (!isNodeError(err)) throw err;
        this.logger.warn({ authorizer, nonce, error: (err as Error).message?.slice(0, 200) }, 'receipt poll failed at the node; still pending');
      }
      if (used) {
        const { hash, block } = used;
        await (this.txHost as TxHost).withTransaction(() => this.recordUse(authorizer, nonce, hash, block));
        return hash;
      }
      if (Date.now() >= deadline) return null;
      await new Promise((r) => setTimeout(r, Math.min(250, Math.max(1, deadline - Date.now()))));
    }
  }

  /**
   * An authorization of `authorizer` used on chain settles every record keyed by it: the agent payment
   * (succeeded) and the x402 settlement of our own challenges (settled), with the block that holds the
   * use (re-derived after a reorg). Runs inside the caller's transaction.
   * @returns whether a payment changed.
   */
  private async recordUse(authorizer: string, nonce: string, txHash: string, block: number): Promise<boolean> {
    await this.x402.markSettled(authorizer, nonce, txHash, block);
    return (await this.repo.markUsed(authorizer, nonce, txHash, block)) !== null;
  }

  /** Resumes every idle pending/submitted payment once. @returns how many were looked at. */
  async sweepOnce(idleSeconds = this.config.env.PAYMENT_SWEEP_IDLE_SECONDS): Promise<number> {
    const idle = await this.repo.idle(new Date(Date.now() - idleSeconds * 1000));
    for (const p of idle) {
      try {
        await this.payments.resume(p);
      } catch (err) {
        this.logger.warn({ paymentId: p.id, error: (err as Error).message }, 'payment sweep step failed');
      }
    }
    return idle.length;
  }
}
