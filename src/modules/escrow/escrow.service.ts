import { Injectable } from '@nestjs/common';
import { FundingTerms, VerifiedAction } from '@lib/chain';
import { formatAmount } from '@lib/money';
import { getAddress, ZeroAddress, type Wallet } from 'ethers';
import type { Principal } from '../../kernel/auth/principal';
import { AppError } from '../../common/errors/app-error';
import { IdempotentSteps } from '../../kernel/idempotency/idempotent.decorator';
import { ListPage, toPage } from '../../common/http/list.dto';
import { TransactionHost, TxHost } from '../../database/transaction';
import { CheckoutService, inspectionWindowSeconds } from '../checkout/checkout.service';
import { effectiveStatus } from '../checkout/checkout.mapper';
import { checkoutEscrowKey } from '../checkout/checkout-escrow-key';
import { OrgsService } from '../orgs/orgs.service';
import { CheckoutFundingDto, EscrowDto } from './dto/escrow.dto';
import { EscrowChainService } from './escrow-chain.service';
import { Escrow, EscrowChainEventRow } from './escrow.entity';
import { EscrowProjector } from './escrow-projector.service';
import { EscrowMapper } from './escrow.mapper';
import { RelayerService } from '../../chain/relayer/relayer.service';
import { EscrowRepository } from './escrow.repository';
import { ESCROW_ACTIONS, EscrowApiAction, EscrowStatus } from './escrow.state';

/** The body of a party action: the transaction hash and, for release and dispute, `confirm`. */
export interface EscrowActionInput {
  txHash: string;
  confirm?: unknown;
}

/** What {@link EscrowService.prepareAction} established before any transaction. */
export interface PreparedEscrowAction {
  escrowKey: string;
  /** The verified on-chain action, or null when its tx hash was already applied as this action. */
  verified: VerifiedAction | null;
}

/**
 * Escrows as their parties see them (docs/api.md escrow endpoints, docs/architecture.md §7): reads scoped to the
 * organisations bound to the buyer or seller address, party actions verified against the chain
 * before any state changes, and the signed funding terms of a checkout.
 */
@Injectable()
export class EscrowService {
  constructor(
    private readonly repo: EscrowRepository,
    private readonly projector: EscrowProjector,
    private readonly chain: EscrowChainService,
    private readonly mapper: EscrowMapper,
    private readonly checkout: CheckoutService,
    private readonly orgs: OrgsService,
    private readonly txHost: TransactionHost,
    private readonly relayer: RelayerService,
  ) {}

  /**
   * What a refund of the checkout behind escrow `escrowId` reads of it (DESIGN §21): its status and
   * flag, the amount in base units, the seller (who received it) and the buyer; null for an unknown id.
   * In the caller's transaction, unlocked (the refund locks the checkout).
   */
  async refundTerms(escrowId: string): Promise<{ status: string; flag: string | null; amountUnits: bigint; sellerAddress: string; buyerAddress: string } | null> {
    const e = await this.repo.findById(escrowId);
    return e ? { status: e.status, flag: e.flag, amountUnits: e.amountUnits, sellerAddress: e.sellerAddress, buyerAddress: e.buyerAddress } : null;
  }

  /** @throws AppError not_found when the caller's organisation is not a party. */
  async get(principal: Principal, id: string): Promise<EscrowDto> {
    const escrow = await this.repo.findForOrganization(principal.organizationId, id);
    if (!escrow) throw AppError.notFound('escrow');
    return this.render(escrow, principal.organizationId);
  }

  async list(
    principal: Principal,
    q: { limit?: number; startingAfter?: string; role?: 'buyer' | 'seller'; status?: EscrowStatus },
  ): Promise<ListPage<EscrowDto>> {
    const limit = q.limit ?? 10;
    const rows = await this.repo.list(principal.organizationId, { limit, startingAfter: q.startingAfter, role: q.role, status: q.status });
    const page = toPage(rows, limit, (r) => r);
    return { ...page, data: await Promise.all(page.data.map((e) => this.render(e, principal.organizationId))) };
  }

  /**
   * The work of a party action's operation (escrow.operations.ts; the REST route returns it as it
   * is): `prepare` = {@link prepareAction} (checks and chain verification, no transaction held),
   * `run` = {@link applyAction} in the key's transaction (docs/architecture.md §5, §7).
   * @throws AppError from its steps only, as those two document.
   */
  actionWork(principal: Principal, id: string, action: EscrowApiAction, body: EscrowActionInput): IdempotentSteps<PreparedEscrowAction, EscrowDto> {
    return new IdempotentSteps(
      (prepared) => this.applyAction(principal, id, action, body, prepared),
      () => this.prepareAction(principal, id, action, body),
    );
  }

  /**
   * A party action reported with its transaction hash (docs/api.md Escrow action rules,
   * docs/architecture.md §7), step one of two, then {@link applyAction}: the checks on plain
   * reads, then the chain verification of its txHash, with no
   * transaction or pooled connection held across the RPC calls (docs/architecture.md §5).
   * Order of checks: visible (404) → confirm (400 confirm_required) → party (403 forbidden) →
   * already applied (no chain call) → state (409) → chain verification (400 / 409 pending / 503).
   * Side-effect free: twins under one Idempotency-Key may both run it.
   * @returns the escrow's key and the verified action, or `verified: null` when the tx hash is already recorded as this action.
   */
  async prepareAction(principal: Principal, id: string, action: EscrowApiAction, body: EscrowActionInput): Promise<PreparedEscrowAction> {
    const escrow = await this.repo.findForOrganization(principal.organizationId, id);
    const { recorded } = await this.check(principal, action, body, escrow);
    const rule = ESCROW_ACTIONS[action];
    if (recorded) return { escrowKey: escrow!.escrowKey, verified: null };
    const senders = (rule.actors as ReadonlyArray<'buyer' | 'seller'>).map((r) => (r === 'buyer' ? escrow!.buyerAddress : escrow!.sellerAddress));
    return { escrowKey: escrow!.escrowKey, verified: await this.chain.verify(body.txHash.toLowerCase(), escrow!.escrowKey, rule.event, senders) };
  }

  /**
   * Applies a prepared action in a transaction (joined when the caller has one) holding the escrow
   * row lock, after the checks of {@link prepareAction} again on the locked row: the escrow may
   * have moved since (the indexer applying the same log returns the escrow as it is).
   * @throws AppError as {@link prepareAction}; 409 `pending` when a tx hash seen as recorded is gone (reorg).
   */
  applyAction(principal: Principal, id: string, action: EscrowApiAction, body: EscrowActionInput, prepared: PreparedEscrowAction): Promise<EscrowDto> {
    return (this.txHost as TxHost).withTransaction(async () => {
      const locked = await this.repo.findByKeyForUpdate(prepared.escrowKey);
      const escrow = locked && locked.id === id.toLowerCase() && this.rolesOf(locked, principal.organizationId).length > 0 ? locked : null;
      const { recorded, events } = await this.check(principal, action, body, escrow);
      if (recorded) return this.mapper.toDto(escrow!, events, principal.organizationId);
      const txHash = body.txHash.toLowerCase();
      if (!prepared.verified) {
        throw new AppError('invalid_request', `Transaction ${txHash} is no longer applied to this escrow (chain reorganisation); retry`, { reason: 'pending', txHash }, 409);
      }
      const { escrow: after } = await this.projector.apply(prepared.verified.event, prepared.verified.by);
      return this.render(after ?? escrow!, principal.organizationId);
    });
  }

  /**
   * The database checks of an action, in their order (404 → confirm → 403 → recorded → 409).
   * @returns recorded true when this tx hash is already applied as this action, and the escrow's applied events.
   */
  private async check(
    principal: Principal,
    action: EscrowApiAction,
    body: EscrowActionInput,
    escrow: Escrow | null,
  ): Promise<{ recorded: boolean; events: EscrowChainEventRow[] }> {
    const rule = ESCROW_ACTIONS[action];
    if (!escrow) throw AppError.notFound('escrow');
    if (rule.confirm && body.confirm !== true) {
      throw new AppError('confirm_required', `${action} moves or locks money: send "confirm": true`, { fields: [{ param: 'confirm', message: 'must be true' }] });
    }
    const roles = this.rolesOf(escrow, principal.organizationId);
    const allowed = rule.actors as ReadonlyArray<'buyer' | 'seller'>;
    if (!roles.some((r) => allowed.includes(r))) {
      throw new AppError('forbidden', `Only the ${allowed.join(' or ')} may ${action} this escrow`, { reason: `not_${allowed.join('_or_')}`, role: roles[0] });
    }
    const txHash = body.txHash.toLowerCase();
    const events = await this.repo.chainEvents(escrow.id);
    const recorded = events.find((t) => t.txHash === txHash);
    if (recorded) {
      if (recorded.action !== rule.event) {
        throw new AppError('invalid_request', `Transaction ${txHash} was already recorded as '${recorded.action}' on this escrow`, { reason: 'tx_already_used' });
      }
      return { recorded: true, events };
    }
    if (!(rule.from as readonly EscrowStatus[]).includes(escrow.status)) {
      throw AppError.invalidState('escrow', escrow.status, rule.from);
    }
    return { recorded: false, events };
  }

  /**
   * The funding terms of an open checkout (public read by checkout id, docs/architecture.md §7 and §13).
   * Contract v2 terms bind the buyer, so they are signed only for a given `buyer` address (checksummed
   * in the answer); without one the answer shows the order with `terms.buyer` and `termsSignature`
   * null. The terms deadline is the checkout's expiresAt, so funding after expiry reverts on-chain.
   * A checkout created for an agent escrow gives signed terms to the agent's signer only (§18).
   * @throws AppError not_found; 400 invalid_request `buyer_not_allowed` when an agent escrow's checkout is
   *   asked for another buyer; 409 invalid_request when the checkout is not open or its organisation has no payout address.
   */
  async fundingTerms(checkoutId: string, buyer?: string): Promise<CheckoutFundingDto> {
    const session = await this.checkout.findById(checkoutId);
    if (!session) throw AppError.notFound('checkout session');
    const status = effectiveStatus(session, new Date());
    if (status !== 'open') throw AppError.invalidState('checkout session', status, ['open']);
    const org = await this.orgs.getOrganization(session.organizationId);
    if (!org?.payoutAddress) {
      throw new AppError('invalid_request', 'The merchant has no payout address yet', { reason: 'no_payout_address' }, 409);
    }
    const required = await this.checkout.requiredBuyer(session.id);
    if (required && buyer && buyer.toLowerCase() !== required.toLowerCase()) {
      throw new AppError('invalid_request', "This checkout funds an agent escrow: only the agent's signer may fund it", {
        reason: 'buyer_not_allowed',
        fields: [{ param: 'buyer', message: "must be the agent's signer address" }],
      });
    }
    const terms: FundingTerms = {
      escrowKey: checkoutEscrowKey(session),
      buyer: buyer ? getAddress(buyer.toLowerCase()) : ZeroAddress,
      seller: org.payoutAddress,
      amount: session.amountUnits,
      inspectionWindow: inspectionWindowSeconds(session.escrowTemplateId, session.metadata),
      deadline: Math.floor(session.expiresAt.getTime() / 1000),
    };
    return {
      checkoutSessionId: session.id,
      amount: formatAmount(session.amountUnits),
      chainId: this.chain.chainId,
      escrowContract: this.chain.gateway.escrowAddress,
      token: this.chain.usdc.address,
      terms: {
        escrowId: terms.escrowKey,
        buyer: buyer ? terms.buyer : null,
        seller: terms.seller,
        amount: session.amountUnits.toString(),
        inspectionWindow: Number(terms.inspectionWindow),
        deadline: Number(terms.deadline),
      },
      termsSignature: buyer ? await this.chain.signTerms(terms) : null,
      expiresAt: session.expiresAt.toISOString(),
    };
  }

  /**
   * An escrow as its buyer's pay page shows it (public by checkout id, docs/architecture.md §16), or null.
   * `fundedAt` is when the projector first recorded it; `inspectionEndsAt` is the auto-release time once delivered.
   */
  async buyerView(escrowId: string): Promise<{
    escrowId: string;
    escrowKey: string;
    status: string;
    buyer: string;
    fundedAt: string;
    deliveredAt: string | null;
    inspectionEndsAt: string | null;
  } | null> {
    const e = await this.repo.findById(escrowId);
    if (!e) return null;
    return {
      escrowId: e.id,
      escrowKey: e.escrowKey,
      status: e.status,
      buyer: e.buyerAddress,
      fundedAt: e.createdAt.toISOString(),
      deliveredAt: e.deliveredAt?.toISOString() ?? null,
      inspectionEndsAt: e.autoReleaseAt?.toISOString() ?? null,
    };
  }

  /**
   * Demo payment on a local chain (docs/architecture.md §9 demo:pay): `buyer` signs an EIP-3009
   * ReceiveWithAuthorization for the checkout's signed terms, as the pay page's wallet does, and the
   * relayer queue broadcasts it (docs/architecture.md §5: the one sender of the relayer key, so a
   * worker must be running). Waits for the receipt and applies the funding through the projector (the
   * indexer converges on the same row). Must not be called inside a database transaction.
   * @throws AppError as {@link fundingTerms}; ChainTxError when the contract refuses; RelayTimeoutError
   *   when no worker broadcast it within RELAYER_WAIT_MS (it stays queued and is sent later).
   */
  async payAsBuyer(checkoutId: string, buyer: Wallet): Promise<{ txHash: string; escrowId: string; status: string }> {
    const funding = await this.fundingTerms(checkoutId, buyer.address);
    const terms = EscrowService.toChainTerms(funding);
    const auth = await this.chain.gateway.signReceiveAuthorization(buyer.connect(this.chain.provider), terms);
    const data = this.chain.gateway.encodeFundWithAuthorization(terms, funding.termsSignature!, auth);
    const relayed = await this.relayer.relay({ to: this.chain.gateway.escrowAddress, data, purpose: 'demo-funding', reference: checkoutId });
    const txHash = (await this.relayer.waitMined(relayed.relayTxId, 120_000))?.hash ?? relayed.txHash;
    const verified = await this.chain.gateway.verifyActionTx(txHash, { escrowKey: terms.escrowKey, action: 'funded' });
    const { escrow } = await this.projector.apply(verified.event, verified.from);
    if (!escrow) throw new AppError('internal', 'funding was mined but not recorded');
    return { txHash, escrowId: escrow.id, status: escrow.status };
  }

  /**
   * The arbiter's resolution of a disputed escrow (operator CLI only, docs/api.md 9: not public API).
   * @throws AppError not_found; 409 invalid_request unless the escrow is disputed.
   */
  async resolveDispute(escrowId: string, to: 'buyer' | 'seller'): Promise<{ txHash: string; escrowId: string; status: string }> {
    const escrow = await this.repo.findById(escrowId);
    if (!escrow) throw AppError.notFound('escrow');
    if (escrow.status !== 'disputed') throw AppError.invalidState('escrow', escrow.status, ['disputed']);
    const txHash = await this.chain.gateway.resolve(this.chain.arbiter, escrow.escrowKey, to === 'seller');
    const verified = await this.chain.gateway.verifyActionTx(txHash, { escrowKey: escrow.escrowKey, action: 'resolved' });
    const { escrow: after } = await this.projector.apply(verified.event, verified.from);
    return { txHash, escrowId, status: (after ?? escrow).status };
  }

  /** The funding terms as the chain library takes them (CLI, tests); `buyer` is the zero address when unbound. */
  static toChainTerms(f: CheckoutFundingDto): FundingTerms {
    return { escrowKey: f.terms.escrowId, buyer: f.terms.buyer ?? ZeroAddress, seller: f.terms.seller, amount: BigInt(f.terms.amount), inspectionWindow: f.terms.inspectionWindow, deadline: f.terms.deadline };
  }

  private rolesOf(e: Escrow, organizationId: string): Array<'buyer' | 'seller'> {
    const roles: Array<'buyer' | 'seller'> = [];
    if (e.buyerOrganizationId === organizationId) roles.push('buyer');
    if (e.sellerOrganizationId === organizationId) roles.push('seller');
    return roles;
  }

  private async render(e: Escrow, organizationId: string): Promise<EscrowDto> {
    return this.mapper.toDto(e, await this.repo.chainEvents(e.id), organizationId);
  }
}
