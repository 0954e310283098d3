import { Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { ChainTxError, type Eip712Domain, isConfirmed, TRANSFER_WITH_AUTHORIZATION_TYPES } from '@lib/chain';
import { AmountFormatError, formatAmount, parseAmount } from '@lib/money';
import { getAddress, isError, keccak256, toUtf8Bytes } from 'ethers';
import { v7 as uuidv7 } from 'uuid';
import type { Principal } from '../../kernel/auth/principal';
import { AppError } from '../../common/errors/app-error';
import { ListPage, toPage } from '../../common/http/list.dto';
import { EventsService } from '../../common/outbox/events.service';
import { WebhookEvent } from '../../common/outbox/webhook-event';
import { assertMetadataBounds } from '../../common/validation/metadata';
import { IdempotentSteps } from '../../kernel/idempotency/idempotent.decorator';
import type { IdempotentWork } from '../../kernel/idempotency/idempotency.service';
import { AppConfig } from '../../config/app-config';
import { TransactionHost, TxHost } from '../../database/transaction';
import { ChainAccess } from '../../chain/chain-access.service';
import { RelayerService, RelayTimeoutError } from '../../chain/relayer/relayer.service';
import { BalanceProjector, type BalanceMovement } from '../balance/balance-projector.service';
import { CheckoutService } from '../checkout/checkout.service';
import { PaymentsService } from '../payments/payments.service';
import { X402Settlements } from '../payments/x402-settlements.service';
import type { CreateRefundDto, RefundDto, SubmitRefundDto } from './dto/refund.dto';
import { Refund, RefundSourceType, RefundStatus } from './refund.entity';
import { RefundsRepository } from './refunds.repository';
import { RefundSources, RefundSourceRow } from './refund-sources';

/** How far below a refund's creation block its AuthorizationUsed log is looked for (a reorg can re-mine lower block numbers; the node's `finalized` depth). */
export const REFUND_REORG_MARGIN_BLOCKS = 64;
/** Relayer `purpose` of a refund's transferWithAuthorization (reference = the refund id; one live relay per refund, DESIGN §22). */
export const REFUND_RELAY_PURPOSE = 'refund';

/** Ledger rows as the balance projector resolves and records them (its entity stays the balance module's own). */
type BalanceTransaction = Awaited<ReturnType<BalanceProjector['resolve']>>[number];

/**
 * `cursor` of the refunds' ledger rows (balance_transactions): no chain cursor has this name, so no
 * indexer's rewind removes them; the refund watcher does, when a reorg takes the refund back (DESIGN §21, §22).
 */
export const REFUND_LEDGER_CURSOR = 'refund-watcher';

/** The refund's EIP-3009 nonce: keccak256("refund:" + id), lower-case hex (DESIGN §21: derived from the refund id). */
export function refundNonce(id: string): string {
  return keccak256(toUtf8Bytes(`refund:${id.toLowerCase()}`)).toLowerCase();
}

/** What the chain says about one refund (read by {@link RefundsService.observe}, applied by {@link RefundsService.apply}). */
export type RefundObservation =
  | { kind: 'mined'; txHash: string; logIndex: number; blockNumber: number; blockHash: string }
  | { kind: 'gone' }
  | { kind: 'reverted' }
  | { kind: 'lost' }
  | { kind: 'cancelled' }
  | { kind: 'expired' }
  | { kind: 'waiting' };

/** What a txHash submit verified on chain before its transaction. */
interface VerifiedTransfer {
  txHash: string;
  logIndexes: number[];
  blockNumber: number;
  blockHash: string;
  /** The `refund` ledger row of each matching log, read from the chain with the verification. */
  ledger: BalanceTransaction[];
}

const OPEN: readonly RefundStatus[] = ['requires_signature', 'pending'];

/** What the refunds module asks of a source's owner (DESIGN §21). */
interface RefundedUnits {
  addRefunded(id: string, delta: bigint): Promise<void>;
  refundedUnits(id: string): Promise<bigint>;
}

/**
 * Refunds after the money was received (DESIGN §21): a released checkout, an agent payment or an
 * x402 settlement this organisation received. The bound (requires_signature + pending + succeeded
 * ≤ amount received) is checked under the source's row lock at create and again at submit; the
 * money moves by the receiving wallet's EIP-3009 transferWithAuthorization (relayed, one live relay
 * per refund, DESIGN §22) or by a transfer the seller sent itself (txHash, verified on chain). The
 * chain settles a refund whatever the API heard ({@link observe} / {@link apply}, run by the
 * watcher and after a submit). Amounts are bigint base units inside, decimal text outside; every
 * state change writes its outbox event (refund.created/updated/succeeded/failed) in its transaction.
 */
@Injectable()
export class RefundsService implements OnModuleInit {
  private readonly logger = new Logger('Refunds');
  /** Where the watcher's next pass continues among open refunds (process-local; null = from the first). */
  private watchCursor: string | null = null;
  /** USDC's EIP-712 domain once read (fixed for the process): DTOs built under row locks use it, no RPC (review F4). */
  private domain?: Eip712Domain;

  constructor(
    private readonly repo: RefundsRepository,
    private readonly events: EventsService,
    private readonly chain: ChainAccess,
    private readonly relayer: RelayerService,
    private readonly txHost: TransactionHost,
    private readonly config: AppConfig,
    private readonly balance: BalanceProjector,
    payments: PaymentsService,
    settlements: X402Settlements,
    checkouts: CheckoutService,
    private readonly lockedSources: RefundSources,
  ) {
    this.sources = { checkout_session: checkouts, payment: payments, x402_settlement: settlements };
  }

  /** The module that owns each source's row and its `refunded_units` (docs/architecture.md "Ownership map"). */
  private readonly sources: Record<RefundSourceType, RefundedUnits>;

  /** The owner of `type`'s rows. @throws Error for a type without one (never a default). */
  private source(type: RefundSourceType): RefundedUnits {
    const owner = this.sources[type];
    if (!owner) throw new Error(`refund source type without an owner: ${type}`);
    return owner;
  }

  /** Registers the refunds' rule with the ledger's reconciliation (DESIGN §21; {@link refundMovementsIn}). */
  onModuleInit(): void {
    this.balance.registerSource('refund', (organizationId, fromBlock, toBlock) => this.refundMovementsIn(organizationId, fromBlock, toBlock));
  }

  /**
   * The `refund` movements of `organizationId` in blocks `[fromBlock, toBlock]`, for reconciliation:
   * every USDC AuthorizationUsed log of a refund's nonce (whatever the refund's status says: a transfer
   * the watcher has not settled yet is a Transfer without its row), read in windows of 2000 blocks, and
   * each succeeded txHash refund's recorded Transfer. Network and read-only database calls.
   */
  private async refundMovementsIn(organizationId: string, fromBlock: number, toBlock: number): Promise<BalanceMovement[]> {
    const out = new Map<string, BalanceMovement>();
    for (let start = fromBlock; start <= toBlock; start += 2000) {
      const used = (await this.chain.usdc.getAuthorizationLogs(start, Math.min(toBlock, start + 1999))).filter((l) => l.kind === 'used');
      const refunds = await this.repo.withNonces(organizationId, [...new Set(used.map((l) => l.nonce.toLowerCase()))]);
      for (const r of refunds) {
        const log = used.find((l) => l.nonce.toLowerCase() === r.authNonce && l.authorizer.toLowerCase() === r.fromAddress.toLowerCase());
        if (log) out.set(`${log.txHash.toLowerCase()}:${log.logIndex}`, { ...this.ledgerMovement(r, log.txHash, log.logIndex + 1), eventLogIndex: log.logIndex });
      }
    }
    for (const r of await this.repo.succeededInBlocks(organizationId, fromBlock, toBlock)) {
      if (r.method === 'tx_hash' && r.txHash && r.logIndex !== null) out.set(`${r.txHash}:${r.logIndex}`, this.ledgerMovement(r, r.txHash, r.logIndex));
    }
    return [...out.values()];
  }

  /**
   * Runs `fn` in a transaction, USDC's EIP-712 domain read first (review F4: the DTOs built inside
   * need it, and reading it is an RPC when USDC_EIP712_NAME/VERSION are not set; never with the
   * source's row locked). @throws ChainUnavailableError (503) when the domain cannot be read.
   */
  private async tx<T>(fn: () => Promise<T>): Promise<T> {
    await this.loadDomain();
    return (this.txHost as TxHost).withTransaction(fn);
  }

  /** Reads USDC's EIP-712 domain once per process (outside any transaction). */
  private async loadDomain(): Promise<Eip712Domain> {
    this.domain ??= await this.readChain(() => this.chain.usdc.eip712Domain());
    return this.domain;
  }

  /**
   * POST /{checkout-sessions|payments|x402-settlements}/{id}/refunds (operation `create-refund`):
   * `prepare` reads the chain head (its block and time fix `createdBlock` and validBefore = time + 24 h),
   * `run` locks the source, checks it is refundable and that the active refunds plus `amount` stay
   * within the amount received, inserts the refund `requires_signature` and writes refund.created.
   * @throws AppError 400 invalid_request (amount, metadata); 404 not_found (no such source received by
   *   this organisation); 409 not_refundable (`details.reason`, `details.status`); 409 refund_exceeds_amount
   *   (`details.requested`, `details.refundable`, `details.received`); 503 unavailable (chain node down).
   */
  createWork(principal: Principal, sourceType: RefundSourceType, sourceId: string, input: CreateRefundDto): IdempotentSteps<{ block: number; time: number }, RefundDto> {
    const amount = this.parseAmount(input.amount);
    assertMetadataBounds('metadata', input.metadata);
    return new IdempotentSteps(
      ({ block, time }) =>
        this.tx(async () => {
          const source = await this.lockVisibleSource(principal, sourceType, sourceId);
          await this.assertWithinBound(source, sourceType, amount);
          const now = new Date();
          const id = uuidv7();
          const refund = Object.assign(new Refund(), {
            id,
            organizationId: principal.organizationId,
            sourceType,
            sourceId: source.id,
            status: 'requires_signature' as RefundStatus,
            amountUnits: amount,
            reason: input.reason ?? null,
            metadata: input.metadata ?? null,
            fromAddress: getAddress(source.fromAddress!),
            toAddress: getAddress(source.toAddress!),
            authNonce: refundNonce(id),
            validBefore: time + this.config.env.REFUND_VALIDITY_S,
            createdBlock: block,
            method: null,
            signature: null,
            txHash: null,
            logIndex: null,
            blockNumber: null,
            blockHash: null,
            submittedAt: null,
            failureReason: null,
            createdAt: now,
            updatedAt: now,
          });
          await this.repo.insert(refund);
          const dto = await this.toDto(refund);
          await this.events.emit(principal.organizationId, WebhookEvent.RefundCreated, dto);
          return dto;
        }),
      async () => {
        await this.loadDomain();
        return this.readChain(async () => ({ block: await this.chain.provider.getBlockNumber(), time: await this.chain.headTimestamp() }));
      },
    );
  }

  /** GET /refunds/{id}. @throws AppError not_found. */
  async get(principal: Principal, id: string): Promise<RefundDto> {
    const r = await this.repo.findForOrganization(principal.organizationId, id);
    if (!r) throw AppError.notFound('refund');
    return this.toDto(r);
  }

  /** GET /refunds: the organisation's refunds, newest first (DESIGN §6 lists). */
  async list(principal: Principal, q: { limit?: number; startingAfter?: string; status?: RefundStatus }): Promise<ListPage<RefundDto>> {
    const limit = q.limit ?? 10;
    const rows = await this.repo.list(principal.organizationId, { limit, startingAfter: q.startingAfter, status: q.status });
    const page = toPage(rows, limit, (r) => r);
    return { ...page, data: await Promise.all(page.data.map((r) => this.toDto(r))) };
  }

  /**
   * POST /refunds/{id}/cancel (operation `cancel-refund`): only while `requires_signature`; frees its
   * amount and writes refund.updated. Nothing was signed through us, so nothing is sent on chain.
   * @throws AppError not_found; 409 invalid_request (`details.status`, `details.allowed`).
   */
  cancelWork(principal: Principal, id: string): IdempotentSteps<Eip712Domain, RefundDto> {
    return new IdempotentSteps(
      () =>
        this.tx(async () => {
          const r = await this.lockOwned(principal, id);
          if (r.status !== 'requires_signature') throw AppError.invalidState('refund', r.status, ['requires_signature']);
          const after = await this.repo.update(r.id, { status: 'cancelled', failureReason: null });
          const dto = await this.toDto(after);
          await this.events.emit(after.organizationId, WebhookEvent.RefundUpdated, dto);
          return dto;
        }),
      () => this.loadDomain(),
    );
  }

  /**
   * POST /refunds/{id}/submit (operation `submit-refund`), exactly one of:
   * - `{signature}`: `prepare` simulates the transferWithAuthorization (so a bad signature, an ERC-1271
   *   wallet that refuses, or a short balance is a 400 before anything is stored); `run` re-checks the
   *   bound under the source's lock and moves the refund to `pending` with the signature (refund.updated);
   *   `after` relays it (or resumes the live relay of this refund; never a second one) and waits, bounded,
   *   for it to be mined at CONFIRMATIONS, then settles it from the chain.
   * - `{txHash}`: `prepare` verifies the transfer on chain (USDC, from, to, exactly the amount, mined at
   *   CONFIRMATIONS); `run` claims one unclaimed matching transfer log, re-checks the bound and marks the
   *   refund `succeeded` (refund.succeeded).
   * The same signature sent again for a pending refund resumes it (no second relay).
   * @throws AppError 400 invalid_request (neither or both fields; a signature the token refuses, with
   *   `details.reason`; a txHash that does not match, `details.reason` one of not_found, reverted,
   *   wrong_token, no_matching_transfer, tx_already_used); 409 invalid_request `pending` (not mined or not
   *   confirmed yet, not stored); 409 invalid_request (state); 409 refund_exceeds_amount; 409 not_refundable; 404.
   */
  submitWork(principal: Principal, id: string, input: SubmitRefundDto): IdempotentWork<unknown, unknown> {
    const hasSig = typeof input.signature === 'string';
    const hasTx = typeof input.txHash === 'string';
    if (hasSig === hasTx) {
      throw new AppError('invalid_request', 'Send exactly one of signature and txHash', {
        fields: [{ param: hasSig ? 'txHash' : 'signature', message: hasSig ? 'must not be sent with signature' : 'or txHash is required' }],
      });
    }
    if (hasTx) return this.submitTxHashWork(principal, id, input.txHash!.toLowerCase());
    return this.submitSignatureWork(principal, id, input.signature!);
  }

  private submitSignatureWork(principal: Principal, id: string, signature: string): IdempotentWork<unknown, unknown> {
    return {
      prepare: async () => {
        await this.loadDomain();
        const r = await this.repo.findForOrganization(principal.organizationId, id);
        if (!r) throw AppError.notFound('refund');
        if (r.status === 'pending' && r.method === 'signature' && r.signature === signature) return null;
        if (r.status !== 'requires_signature') throw AppError.invalidState('refund', r.status, ['requires_signature']);
        let data: string;
        try {
          data = this.transferData(r, signature);
        } catch {
          throw AppError.invalidParam(
            'signature',
            'is not a valid 65-byte signature (USDC takes v, r, s; a contract wallet that signs otherwise sends the transfer itself and submits {txHash})',
            { reason: 'invalid_signature' },
          );
        }
        try {
          await this.chain.gateway.simulate(this.chain.relayer.address, this.chain.usdc.address, data, 'transferWithAuthorization');
        } catch (err) {
          if (err instanceof ChainTxError) {
            throw new AppError('invalid_request', `The token refuses this authorization: ${err.errorName ?? err.message}`, {
              reason: 'authorization_rejected',
              errorName: err.errorName,
              fields: [{ param: 'signature', message: 'is not a usable transferWithAuthorization of this refund by its from address' }],
            });
          }
          throw this.unavailable(err);
        }
        return null;
      },
      run: () =>
        this.tx(async () => {
          const r = await this.lockOwned(principal, id);
          if (r.status === 'pending' && r.method === 'signature' && r.signature === signature) return this.toDto(r);
          if (r.status !== 'requires_signature') throw AppError.invalidState('refund', r.status, ['requires_signature']);
          const source = await this.lockedSources.lock(r.sourceType, r.sourceId, r.organizationId);
          await this.assertWithinBound(source!, r.sourceType, r.amountUnits, r.id);
          const after = await this.repo.update(r.id, { status: 'pending', method: 'signature', signature, submittedAt: new Date() });
          const dto = await this.toDto(after);
          await this.events.emit(after.organizationId, WebhookEvent.RefundUpdated, dto);
          return dto;
        }),
      after: async () => {
        const r = (await this.repo.findById(id))!;
        await this.sendSigned(r, this.config.env.CHAIN_WAIT_MS);
        return this.toDto((await this.repo.findById(id))!);
      },
    };
  }

  private submitTxHashWork(principal: Principal, id: string, txHash: string): IdempotentWork<unknown, unknown> {
    return {
      prepare: async () => {
        await this.loadDomain();
        const r = await this.repo.findForOrganization(principal.organizationId, id);
        if (!r) throw AppError.notFound('refund');
        if (r.status === 'succeeded' && r.method === 'tx_hash' && r.txHash === txHash) return null;
        if (r.status !== 'requires_signature') throw AppError.invalidState('refund', r.status, ['requires_signature']);
        return this.verifyTransfer(r, txHash);
      },
      run: (prepared) =>
        this.tx(async () => {
          const r = await this.lockOwned(principal, id);
          if (r.status === 'succeeded' && r.method === 'tx_hash' && r.txHash === txHash) return this.toDto(r);
          if (r.status !== 'requires_signature') throw AppError.invalidState('refund', r.status, ['requires_signature']);
          const verified = prepared as VerifiedTransfer;
          const claimed = new Set((await this.repo.claimsOf(txHash, r.id)).map((c) => c.logIndex));
          const logIndex = verified.logIndexes.find((i) => !claimed.has(i));
          if (logIndex === undefined) {
            throw new AppError('invalid_request', `Transaction ${txHash} is already the transfer of another refund`, {
              reason: 'tx_already_used',
              txHash,
              fields: [{ param: 'txHash', message: 'is already used by another refund' }],
            });
          }
          const source = await this.lockedSources.lock(r.sourceType, r.sourceId, r.organizationId);
          await this.assertWithinBound(source!, r.sourceType, r.amountUnits, r.id);
          await this.repo.update(r.id, { status: 'pending', method: 'tx_hash', txHash, submittedAt: new Date() });
          const mined = { kind: 'mined' as const, txHash, logIndex, blockNumber: verified.blockNumber, blockHash: verified.blockHash };
          const after = await this.settleLocked(r.id, mined, verified.ledger.filter((row) => row.logIndex === logIndex));
          return this.toDto(after);
        }),
    };
  }

  /**
   * Relays a pending signature refund's authorization, or resumes its live relay (DESIGN §22: at most
   * one live relayer row per refund; a new one only when every earlier one failed), stores the hash,
   * waits at most `waitMs` for it to be mined at CONFIRMATIONS and settles the refund from the chain.
   * Relay refusals and time-outs leave the refund pending (the watcher resumes it). No transaction open.
   */
  async sendSigned(r: Refund, waitMs: number): Promise<void> {
    if (r.status !== 'pending' || r.method !== 'signature' || !r.signature) return;
    if (await this.readChain(() => this.chain.usdc.authorizationState(r.fromAddress, r.authNonce))) {
      await this.settle(r);
      return;
    }
    let relayTxId: string | null = null;
    try {
      const live = (await this.relayer.relaysFor(REFUND_RELAY_PURPOSE, r.id)).find((x) => x.status !== 'failed');
      const sent = live
        ? await this.relayer.resume(live.id)
        : await this.relayer.relay({ to: this.chain.usdc.address, data: this.transferData(r, r.signature), purpose: REFUND_RELAY_PURPOSE, reference: r.id });
      relayTxId = sent.relayTxId;
      await this.tx(() => this.repo.setRelayHash(r.id, sent.txHash.toLowerCase()));
    } catch (err) {
      if (!(err instanceof ChainTxError) && !(err instanceof RelayTimeoutError) && !(err instanceof AppError && err.status === 503)) throw err;
      this.logger.warn({ refundId: r.id, error: err.message }, 'refund relay not sent yet; the watcher resumes it');
      return;
    }
    if (waitMs > 0) {
      try {
        await this.relayer.waitMined(relayTxId, waitMs);
      } catch (err) {
        if (!(err instanceof ChainTxError)) throw err;
      }
    }
    await this.settle((await this.repo.findById(r.id))!);
  }

  /**
   * One refund brought in line with the chain (the watcher's step, and after a submit): {@link observe}
   * and, for a mined transfer, its `refund` ledger row ({@link ledgerRows}) outside any transaction,
   * then {@link apply} under the locks. A mined transfer whose ledger row the chain does not give at the
   * observed block (a reorg between the two reads) waits for the next pass. No transaction may be open.
   * @returns the refund as it is afterwards.
   */
  async settle(r: Refund): Promise<Refund> {
    const seen = await this.observe(r);
    if (seen.kind === 'waiting') return r;
    let ledger: BalanceTransaction[] = [];
    if (seen.kind === 'mined') {
      ledger = await this.ledgerRows(r, seen.txHash, [seen.logIndex]);
      if (ledger.length !== 1 || ledger[0].blockNumber !== seen.blockNumber) return r;
    }
    return this.tx(() => this.apply(r.id, seen, ledger));
  }

  /**
   * The `refund` ledger rows (DESIGN §21: negative, of the organisation, source the refund) of the USDC
   * Transfer logs `logIndexes` of `txHash`, read from the chain by the ledger's projector (amount, block
   * and time from the log and its block; a log that is not a transfer from the refund's from to its to
   * gives none). Network reads only: call outside any transaction.
   */
  private ledgerRows(r: Refund, txHash: string, logIndexes: readonly number[]): Promise<BalanceTransaction[]> {
    return this.balance.resolve(logIndexes.map((logIndex) => this.ledgerMovement(r, txHash, logIndex)));
  }

  /** The `refund` movement of Transfer log `logIndex` of `txHash` for `r` (resolved by the ledger's projector). */
  private ledgerMovement(r: Refund, txHash: string, logIndex: number): BalanceMovement {
    return {
      type: 'refund' as const,
      organizationId: r.organizationId,
      sourceType: 'refund',
      sourceId: r.id,
      cursor: REFUND_LEDGER_CURSOR,
      txHash,
      // The projector takes the first Transfer after the event's log: the one just before this transfer names it.
      eventLogIndex: logIndex - 1,
      from: r.fromAddress,
      to: r.toAddress,
    };
  }

  /**
   * What the chain says about `r`, at the confirmation depth (DESIGN §18). A refund with a transfer
   * on record (txHash path, or succeeded) is judged by that transaction's receipt (`gone` when a reorg
   * removed it); otherwise by the USDC AuthorizationUsed / AuthorizationCanceled log of its nonce
   * since {@link REFUND_REORG_MARGIN_BLOCKS} below its creation block, whoever sent it, and `expired` once the
   * block at head − CONFIRMATIONS is past validBefore with the nonce unused at that same block
   * ({@link ChainAccess.authorizationAt}). Network calls only.
   */
  async observe(r: Refund): Promise<RefundObservation> {
    const confirmations = this.config.env.CONFIRMATIONS;
    const head = await this.chain.provider.getBlockNumber();
    const tracksTx = r.method === 'tx_hash' || r.status === 'succeeded';
    if (tracksTx && r.txHash) {
      const receipt = await this.chain.usdc.getTransfers(r.txHash);
      if (!receipt) {
        // submittedAt was reset when the reorg was seen ('gone'); wall clock, REFUND_REMINE_S (DESIGN §21: 24 h).
        if (r.status === 'pending' && r.submittedAt && Date.now() - r.submittedAt.getTime() > this.config.env.REFUND_REMINE_S * 1000) return { kind: 'lost' };
        return r.status === 'succeeded' ? { kind: 'gone' } : { kind: 'waiting' };
      }
      if (receipt.status !== 1) return { kind: 'reverted' };
      if (!isConfirmed(receipt.blockNumber, head, confirmations)) return r.status === 'succeeded' ? { kind: 'gone' } : { kind: 'waiting' };
      const log = receipt.transfers.find((t) => t.logIndex === r.logIndex) ?? receipt.transfers.find((t) => this.matches(r, t));
      if (!log || !this.matches(r, log)) return { kind: 'reverted' };
      return { kind: 'mined', txHash: r.txHash, logIndex: log.logIndex, blockNumber: receipt.blockNumber, blockHash: receipt.blockHash };
    }
    const confirmedHead = head - confirmations;
    // A reorg may have removed the blocks the refund was created at: on the new chain its transfer can be
    // mined below `createdBlock` (bench/chaos.mjs found it). The nonce is the refund's own, so reading
    // further back is safe.
    const scanFrom = Math.max(0, r.createdBlock - REFUND_REORG_MARGIN_BLOCKS);
    if (confirmedHead >= scanFrom) {
      const logs = (await this.chain.usdc.getAuthorizationLogs(scanFrom, confirmedHead, r.fromAddress)).filter((l) => l.nonce === r.authNonce);
      const used = logs.find((l) => l.kind === 'used');
      if (used) {
        const receipt = await this.chain.usdc.getTransfers(used.txHash);
        const log = receipt?.transfers.find((t) => this.matches(r, t));
        if (receipt && log) return { kind: 'mined', txHash: used.txHash.toLowerCase(), logIndex: log.logIndex, blockNumber: receipt.blockNumber, blockHash: receipt.blockHash };
      }
      if (logs.some((l) => l.kind === 'canceled')) return { kind: 'cancelled' };
    }
    // Both from ONE block at head − CONFIRMATIONS (review F1): the latest block's time and state may be
    // a branch that a reorg replaces with one where the transfer was mined in time.
    const at = await this.chain.authorizationAt(r.fromAddress, r.authNonce);
    if (!at.used && at.timestamp >= r.validBefore) return { kind: 'expired' };
    return { kind: 'waiting' };
  }

  /**
   * Applies an observation under the source's and the refund's row locks (in the caller's transaction),
   * from the refund's current status: mined → succeeded (refund.succeeded; the source's refundedAmount
   * grows), from open or from failed expired / reorged (review F1), or a succeeded refund's new block recorded; gone → a succeeded refund back to pending
   * (refund.updated; refundedAmount shrinks); cancelled / expired / reverted → an open refund failed
   * (refund.failed; its amount is free again). Anything else changes nothing.
   * The refund's `refund` ledger row moves with it in the same transaction (DESIGN §21, §22): `ledger`
   * (the row of the mined transfer, from {@link ledgerRows}) is recorded when the refund succeeds or
   * its transfer moved to another block; the row is deleted when a reorg takes the refund back to `pending`.
   */
  async apply(id: string, seen: RefundObservation, ledger: BalanceTransaction[] = []): Promise<Refund> {
    const current = (await this.repo.findById(id))!;
    await this.lockedSources.lock(current.sourceType, current.sourceId, current.organizationId);
    await this.repo.lock(id);
    return this.settleLocked(id, seen, ledger);
  }

  /** {@link apply} once the locks are held. */
  private async settleLocked(id: string, seen: RefundObservation, ledger: BalanceTransaction[]): Promise<Refund> {
    const r = (await this.repo.findById(id))!;
    switch (seen.kind) {
      case 'mined': {
        if (r.status === 'succeeded') {
          if (r.blockHash === seen.blockHash && r.txHash === seen.txHash) {
            await this.balance.record(ledger);
            return r;
          }
          if (r.txHash && r.logIndex !== null) await this.balance.unrecord([{ txHash: r.txHash, logIndex: r.logIndex }]);
          await this.balance.record(ledger);
          return this.repo.update(r.id, { txHash: seen.txHash, logIndex: seen.logIndex, blockNumber: seen.blockNumber, blockHash: seen.blockHash });
        }
        const revived = r.status === 'failed' && (r.failureReason === 'expired' || r.failureReason === 'reorged');
        if (!OPEN.includes(r.status) && !revived) return r;
        if (revived) await this.reportIfPastBound(r);
        const after = await this.repo.update(r.id, {
          status: 'succeeded',
          method: r.method ?? 'signature',
          txHash: seen.txHash,
          logIndex: seen.logIndex,
          blockNumber: seen.blockNumber,
          blockHash: seen.blockHash,
          failureReason: null,
        });
        await this.source(r.sourceType).addRefunded(r.sourceId, r.amountUnits);
        await this.balance.record(ledger);
        await this.events.emit(r.organizationId, WebhookEvent.RefundSucceeded, await this.toDto(after));
        return after;
      }
      case 'gone': {
        if (r.status !== 'succeeded') return r;
        if (r.txHash && r.logIndex !== null) await this.balance.unrecord([{ txHash: r.txHash, logIndex: r.logIndex }]);
        const after = await this.repo.update(r.id, {
          status: 'pending',
          blockNumber: null,
          blockHash: null,
          ...(r.method === 'tx_hash' ? { submittedAt: new Date() } : { txHash: null, logIndex: null }),
        });
        await this.source(r.sourceType).addRefunded(r.sourceId, -r.amountUnits);
        await this.events.emit(r.organizationId, WebhookEvent.RefundUpdated, await this.toDto(after));
        return after;
      }
      case 'cancelled':
      case 'expired':
      case 'reverted':
      case 'lost': {
        if (!OPEN.includes(r.status)) return r;
        const after = await this.repo.update(r.id, { status: 'failed', failureReason: seen.kind === 'lost' ? 'reorged' : seen.kind });
        await this.events.emit(r.organizationId, WebhookEvent.RefundFailed, await this.toDto(after));
        return after;
      }
      default:
        return r;
    }
  }

  /**
   * A failed (expired / reorged) refund whose transfer the chain shows mined after all (a reorg deeper
   * than CONFIRMATIONS; review F1): the money moved, so it succeeds whatever the bound says. When other
   * active refunds took its room meanwhile, the source ends refunded past what it received: logged as
   * an error, never hidden (docs/decisions.md); those other refunds' submits are then refused by the bound.
   * Under the source's lock (the caller's transaction).
   */
  private async reportIfPastBound(r: Refund): Promise<void> {
    const source = await this.lockedSources.lock(r.sourceType, r.sourceId, r.organizationId);
    const active = await this.repo.activeSum(r.sourceType, r.sourceId, r.id);
    if (source && active + r.amountUnits > source.received) {
      this.logger.error(
        { refundId: r.id, source: `${r.sourceType}:${r.sourceId}`, active: formatAmount(active), amount: formatAmount(r.amountUnits), received: formatAmount(source.received) },
        'refund mined after it failed: refunds of this source now exceed what it received',
      );
    }
  }

  /**
   * The watcher's pass (worker job `refund-watch`, DESIGN §21): at most `limit` open refunds and the
   * succeeded ones mined in the last `reorgWindow` blocks, each settled from the chain; a pending
   * signature refund whose authorization is still unused is relayed again or its live relay resumed.
   * One refund's failure (node error) is logged and the pass goes on.
   * @returns how many refunds were looked at.
   */
  async watchOnce(limit = 200, reorgWindow = 64): Promise<number> {
    const head = await this.chain.provider.getBlockNumber();
    const batch = await this.repo.watchBatch(limit, Math.max(0, head - reorgWindow), this.watchCursor);
    const open = batch.filter((r) => OPEN.includes(r.status));
    this.watchCursor = open.length >= limit ? open[open.length - 1].id : null;
    for (const r of batch) {
      try {
        const after = await this.settle(r);
        if (after.status === 'pending' && after.method === 'signature') await this.sendSigned(after, 0);
      } catch (err) {
        this.logger.warn({ refundId: r.id, error: (err as Error).message }, 'refund watch step failed');
      }
    }
    return batch.length;
  }

  /** The refund as the API shows it (DESIGN §21; explicit field list). */
  async toDto(r: Refund): Promise<RefundDto> {
    const typedData = r.method === 'tx_hash' ? null : await this.typedData(r);
    return {
      id: r.id,
      status: r.status,
      amount: formatAmount(r.amountUnits),
      currency: 'USDC',
      reason: r.reason,
      metadata: r.metadata,
      from: r.fromAddress,
      to: r.toAddress,
      source: { type: r.sourceType, id: r.sourceId },
      typedData,
      txHash: r.txHash,
      failureReason: r.failureReason,
      expiresAt: new Date(r.validBefore * 1000).toISOString(),
      createdAt: r.createdAt.toISOString(),
      updatedAt: r.updatedAt.toISOString(),
    };
  }

  /** The source's refunded amount as decimal text (succeeded refunds; DESIGN §21 `refundedAmount`). */
  async refundedAmount(type: RefundSourceType, id: string): Promise<string> {
    return formatAmount(await this.source(type).refundedUnits(id));
  }

  /** The EIP-712 typed data the receiving wallet signs (USDC's domain; EIP-3009 TransferWithAuthorization). */
  private async typedData(r: Refund): Promise<RefundDto['typedData']> {
    const domain = this.domain ?? (await this.loadDomain());
    return {
      domain: { ...domain },
      types: { ...TRANSFER_WITH_AUTHORIZATION_TYPES },
      primaryType: 'TransferWithAuthorization',
      message: {
        from: r.fromAddress,
        to: r.toAddress,
        value: r.amountUnits.toString(),
        validAfter: '0',
        validBefore: String(r.validBefore),
        nonce: r.authNonce,
      },
    };
  }

  private transferData(r: Refund, signature: string): string {
    return this.chain.usdc.encodeTransferWithAuthorization({
      from: r.fromAddress,
      to: r.toAddress,
      value: r.amountUnits,
      validAfter: 0n,
      validBefore: BigInt(r.validBefore),
      nonce: r.authNonce,
      signature,
    });
  }

  private matches(r: Refund, t: { from: string; to: string; value: bigint }): boolean {
    return t.from.toLowerCase() === r.fromAddress.toLowerCase() && t.to.toLowerCase() === r.toAddress.toLowerCase() && t.value === r.amountUnits;
  }

  /**
   * A txHash refund's transfer, verified on chain (DESIGN §21, §18): mined, succeeded, confirmed, and
   * carrying at least one USDC Transfer from the refund's from to its to of exactly its amount.
   * @throws AppError 400 invalid_request (`details.reason`), 409 `pending`, 503.
   */
  private async verifyTransfer(r: Refund, txHash: string): Promise<VerifiedTransfer> {
    const bad = (reason: string, message: string) =>
      new AppError('invalid_request', message, { reason, txHash, fields: [{ param: 'txHash', message }] });
    const receipt = await this.readChain(() => this.chain.usdc.getTransfers(txHash));
    if (!receipt) {
      const known = await this.readChain(() => this.chain.provider.getTransaction(txHash));
      if (known) throw new AppError('invalid_request', `Transaction ${txHash} is not mined yet`, { reason: 'pending', txHash }, 409);
      throw bad('not_found', `transaction ${txHash} was not found on chain`);
    }
    if (receipt.status !== 1) throw bad('reverted', `transaction ${txHash} reverted`);
    const head = await this.readChain(() => this.chain.provider.getBlockNumber());
    if (!isConfirmed(receipt.blockNumber, head, this.config.env.CONFIRMATIONS)) {
      throw new AppError('invalid_request', `transaction ${txHash} has not reached ${this.config.env.CONFIRMATIONS} confirmations`, { reason: 'pending', txHash }, 409);
    }
    if (receipt.transfers.length === 0) throw bad('wrong_token', `transaction ${txHash} moved no USDC (token ${this.chain.usdc.address})`);
    const matching = receipt.transfers.filter((t) => this.matches(r, t));
    if (matching.length === 0) {
      throw bad('no_matching_transfer', `transaction ${txHash} has no USDC transfer of ${formatAmount(r.amountUnits)} from ${r.fromAddress} to ${r.toAddress}`);
    }
    const logIndexes = matching.map((t) => t.logIndex);
    const ledger = await this.readChain(() => this.ledgerRows(r, txHash, logIndexes));
    return { txHash, logIndexes, blockNumber: receipt.blockNumber, blockHash: receipt.blockHash, ledger: ledger.filter((row) => row.blockNumber === receipt.blockNumber) };
  }

  /** The source under its row lock, visible to the caller as the receiving organisation. @throws AppError not_found. */
  private async lockVisibleSource(principal: Principal, type: RefundSourceType, id: string): Promise<RefundSourceRow> {
    const source = await this.lockedSources.lock(type, id, principal.organizationId);
    if (!source) throw AppError.notFound(SOURCE_NAMES[type]);
    return source;
  }

  /**
   * The bound (DESIGN §21), under the source's lock: refundable, and the active refunds (but `exceptId`)
   * plus `amount` at most the amount received.
   * @throws AppError 409 not_refundable; 409 refund_exceeds_amount.
   */
  private async assertWithinBound(source: RefundSourceRow, type: RefundSourceType, amount: bigint, exceptId?: string): Promise<void> {
    if (source.notRefundable || !source.fromAddress || !source.toAddress) {
      throw new AppError('not_refundable', `This ${SOURCE_NAMES[type]} is ${source.status}: only money received can be refunded`, {
        reason: source.notRefundable ?? 'not_received',
        status: source.status,
      });
    }
    const active = await this.repo.activeSum(type, source.id, exceptId);
    if (active + amount > source.received) {
      const left = source.received > active ? source.received - active : 0n;
      throw new AppError('refund_exceeds_amount', `At most ${formatAmount(left)} USDC of this ${SOURCE_NAMES[type]} can still be refunded`, {
        requested: formatAmount(amount),
        refundable: formatAmount(left),
        received: formatAmount(source.received),
      });
    }
  }

  /**
   * The caller's refund locked FOR UPDATE after its source's row (the lock order everywhere: the
   * source, then the refund, so a submit, a cancel, a create and the watcher never deadlock).
   * @throws AppError not_found.
   */
  private async lockOwned(principal: Principal, id: string): Promise<Refund> {
    const seen = await this.repo.findForOrganization(principal.organizationId, id);
    if (!seen) throw AppError.notFound('refund');
    await this.lockedSources.lock(seen.sourceType, seen.sourceId, seen.organizationId);
    return (await this.repo.lock(id))!;
  }

  private parseAmount(text: string): bigint {
    try {
      return parseAmount(text, this.config.maxAmountUnits);
    } catch (err) {
      if (err instanceof AmountFormatError) throw AppError.invalidParam('amount', err.message);
      throw err;
    }
  }

  /** A chain read on a request path; a node error answers 503 `unavailable` with Retry-After (DESIGN §22). */
  private async readChain<T>(read: () => Promise<T>): Promise<T> {
    try {
      return await read();
    } catch (err) {
      throw this.unavailable(err);
    }
  }

  private unavailable(err: unknown): unknown {
    if (err instanceof AppError) return err;
    if (isError(err, 'TIMEOUT') || isError(err, 'NETWORK_ERROR') || isError(err, 'SERVER_ERROR') || isError(err, 'UNKNOWN_ERROR')) {
      return new AppError('unavailable', 'The chain node did not answer; retry shortly', { reason: 'chain_unavailable' }, 503, { 'Retry-After': '1' });
    }
    return err;
  }
}

const SOURCE_NAMES: Record<RefundSourceType, string> = {
  checkout_session: 'checkout session',
  payment: 'payment',
  x402_settlement: 'x402 settlement',
};
