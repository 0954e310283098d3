import { Injectable, Logger } from '@nestjs/common';
import { judgedByChain } from '../../chain/relayer/relay-errors';
import { ChainTxError, ESCROW_ACTION_CODES, ESCROW_ACTION_TYPES, type Eip712Domain, type FundingTerms } from '@lib/chain';
import { formatAmount } from '@lib/money';
import { getAddress, hexlify, randomBytes, verifyTypedData } from 'ethers';
import { v7 as uuidv7 } from 'uuid';
import { AppError } from '../../common/errors/app-error';
import { tokenRefusalError } from '../../common/errors/token-refusal';
import { AppConfig } from '../../config/app-config';
import { CheckoutMapper } from '../checkout/checkout.mapper';
import { CheckoutService } from '../checkout/checkout.service';
import { ESCROW_ACTIONS } from '../escrow/escrow.state';
import { EscrowChainService } from '../escrow/escrow-chain.service';
import { EscrowService } from '../escrow/escrow.service';
import { OrgsService } from '../orgs/orgs.service';
import { ChainAccess, ChainUnavailableError } from '../../chain/chain-access.service';
import { RelayerService, RelayTimeoutError } from '../../chain/relayer/relayer.service';
import { CheckoutRelayRepository, type CheckoutRelayRow, type StoredAuthorization } from './checkout-relay.repository';
import type {
  ActionResultDto,
  ActionTypedDataDto,
  CheckoutStateDto,
  FundingTypedDataDto,
  RelayActionDto,
  RelayFundingDto,
  RelayResultDto,
} from './dto/checkout-relay.dto';

type BuyerAction = RelayActionDto['action'];

/** A reservation older than this with no relayer row belongs to a process that died; a retry takes it over. */
const STALE_RESERVATION_SECONDS = 60;
/** How long a twin waits for the first request's broadcast before answering with the reservation. */
const TWIN_WAIT_MS = 15_000;
/** Longest validity of a relayed EscrowAction (the contract's MAX_ACTION_VALIDITY). */
const ACTION_VALIDITY_SECONDS = 600;

/** The authorization fields of a relay body, as stored. */
function authorizationOf(body: RelayFundingDto): StoredAuthorization {
  return { validAfter: BigInt(body.validAfter), validBefore: BigInt(body.validBefore), signature: body.signature };
}

/** EIP712Domain field types, in the order EIP-712 lists them, for the fields `domain` has. */
function domainType(domain: Eip712Domain): Array<{ name: string; type: string }> {
  const all = [
    { name: 'name', type: 'string' },
    { name: 'version', type: 'string' },
    { name: 'chainId', type: 'uint256' },
    { name: 'verifyingContract', type: 'address' },
  ];
  return all.filter((f) => (domain as unknown as Record<string, unknown>)[f.name] !== undefined);
}

/** JSON-safe copy: bigints as decimal text (eth_signTypedData_v4 takes uint256 as strings). */
function jsonSafe<T>(value: T): Record<string, unknown> {
  return JSON.parse(JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))) as Record<string, unknown>;
}

/**
 * A chain refusal in words a buyer understands (docs/architecture.md §16), from the contract's or the
 * token's custom error: 400 `details.reason` insufficient_balance | expired | bad_signature | wrong_terms,
 * 409 invalid_state when the escrow or authorization moved on. Errors other than a revert are rethrown.
 */
/**
 * A failed simulation as the answer (DESIGN §22 "never a refusal such as 400 rejected for a node error";
 * issue 29 finding 3): without revert data the node did not judge the call (a timeout, "header not
 * found", -32603, a rate limit) → 503 `unavailable` with `Retry-After`, nothing stored; with revert data
 * → {@link buyerRefusal}.
 */
function simulationRefusal(err: unknown): AppError {
  if (err instanceof ChainTxError && !judgedByChain(err)) {
    return new AppError('unavailable', 'The chain node could not check this request right now; nothing was sent, retry shortly', { reason: 'node_error' }, 503, { 'Retry-After': '2' });
  }
  return buyerRefusal(err);
}

function buyerRefusal(err: unknown): AppError {
  if (!(err instanceof ChainTxError)) throw err;
  const token = tokenRefusalError(err);
  if (token) return token;
  const name = err.errorName ?? '';
  if (name === 'ERC20InsufficientBalance' || /exceeds balance/i.test(err.message)) {
    return new AppError('invalid_request', 'The wallet does not hold enough USDC for this payment', { reason: 'insufficient_balance' });
  }
  if (['AuthorizationExpired', 'AuthorizationNotYetValid', 'TermsExpired', 'ActionExpired'].includes(name)) {
    return new AppError('invalid_request', 'The signature has expired (or is not valid yet); sign again', { reason: 'expired' });
  }
  if (['InvalidAuthorizationSignature', 'InvalidActionSignature'].includes(name)) {
    return new AppError('invalid_request', 'The signature does not match this payment', { reason: 'bad_signature' });
  }
  if (['InvalidTermsSignature', 'NotTermsBuyer', 'AuthorizationNonceMismatch', 'EscrowIdVoided'].includes(name)) {
    return new AppError('invalid_request', 'These are not the payment terms of this checkout; reload and sign again', { reason: 'wrong_terms' });
  }
  if (['AlreadyFunded', 'AuthorizationUsedOrCanceled', 'ActionNonceReused', 'InvalidState'].includes(name)) {
    return new AppError('invalid_request', 'This payment or action was already carried out', { reason: 'invalid_state', chainError: name }, 409);
  }
  return new AppError('invalid_request', `The chain refused the transaction (${name || 'reverted'})`, { reason: 'rejected', chainError: name || null });
}

/**
 * The checkout host's JSON API behind the pay page (docs/architecture.md §16, docs/api.md "Checkout
 * host JSON"): the page state, the typed data a wallet signs, and the relay of the buyer's signed
 * EIP-3009 funding authorization and EIP-712 escrow actions, so a buyer needs no ETH.
 *
 * A funding relay is stored (keyed by buyer and EIP-3009 nonce) only after the signature recovers to
 * the buyer, the terms are this checkout's, and a simulated call succeeds — all before any database
 * write, so an invalid request cannot take the real buyer's nonce. Then: reserved (committed row) →
 * the relayer queue (its own recovery points, docs/architecture.md §5) → broadcast → finished when the
 * indexer recorded the funding. No chain call runs inside a database transaction.
 */
@Injectable()
export class CheckoutRelayService {
  private readonly logger = new Logger('CheckoutRelay');

  constructor(
    private readonly checkouts: CheckoutService,
    private readonly mapper: CheckoutMapper,
    private readonly escrows: EscrowService,
    private readonly escrowChain: EscrowChainService,
    private readonly orgs: OrgsService,
    private readonly chain: ChainAccess,
    private readonly relayer: RelayerService,
    private readonly repo: CheckoutRelayRepository,
    private readonly config: AppConfig,
  ) {}

  /**
   * GET /checkout/{id}/state. `allowedActions` are the buyer's moves in the escrow's state
   * (docs/api.md "Escrow action rules"): pay while open; release while funded, accepted or
   * delivered; cancel while only funded; dispute once accepted.
   * @throws AppError not_found.
   */
  async state(id: string): Promise<CheckoutStateDto> {
    const session = await this.checkouts.findById(id);
    if (!session) throw AppError.notFound('checkout session');
    const dto = this.mapper.toDto(session);
    const org = await this.orgs.getOrganization(session.organizationId);
    const escrow = dto.escrowId ? await this.escrows.buyerView(dto.escrowId) : null;
    const allowed: string[] = [];
    if (dto.status === 'open') allowed.push('pay');
    if (escrow) {
      for (const action of ['release', 'dispute', 'cancel'] as const) {
        if ((ESCROW_ACTIONS[action].from as readonly string[]).includes(escrow.status)) allowed.push(action);
      }
    }
    return {
      id: session.id,
      status: dto.status,
      amount: session.amountUnits.toString(),
      currency: 'USDC',
      amountDecimal: formatAmount(session.amountUnits),
      merchant: { name: org?.name ?? 'Merchant', handle: org?.handle ?? null },
      description: session.description,
      expiresAt: session.expiresAt.toISOString(),
      redirectUrl: session.redirectUrl ?? null,
      escrow: escrow && { escrowId: escrow.escrowId, status: escrow.status, buyer: escrow.buyer, fundedAt: escrow.fundedAt, deliveredAt: escrow.deliveredAt, inspectionEndsAt: escrow.inspectionEndsAt },
      allowedActions: allowed,
      chainId: this.chain.chainId,
      usdcAddress: this.chain.usdc.address,
      escrowAddress: this.chain.gateway.escrowAddress,
    };
  }

  /**
   * GET /checkout/{id}/funding?buyer=: the EIP-3009 ReceiveWithAuthorization typed data for terms bound
   * to `buyer` (contract v2), valid until the checkout expires.
   * @throws AppError not_found; 409 invalid_request when the checkout is not open.
   */
  async funding(id: string, buyer: string): Promise<FundingTypedDataDto> {
    const funding = await this.escrows.fundingTerms(id, buyer);
    const request = await this.chain.gateway.receiveAuthorizationRequest(buyer, EscrowService.toChainTerms(funding));
    return {
      typedData: jsonSafe({ ...request, types: { EIP712Domain: domainType(request.domain), ...request.types } }) as unknown as FundingTypedDataDto['typedData'],
      terms: jsonSafe({ ...funding.terms, termsSignature: funding.termsSignature }),
    };
  }

  /**
   * POST /checkout/{id}/relay: relays the buyer's signed funding authorization. A replay (same buyer
   * and nonce) answers the stored relay; a concurrent twin waits for the first one's broadcast, and a
   * twin refused by its checks because the first one's relay already used the authorization answers
   * that relay (One live relay per intent, DESIGN §22).
   * @returns the relay: reserved | broadcast | finished, with the transaction hash once broadcast.
   * @throws AppError not_found; 400 `details.reason` bad_signature | wrong_terms | insufficient_balance |
   *   expired (nothing stored); 409 when the checkout is not open.
   */
  async relayFunding(id: string, body: RelayFundingDto): Promise<RelayResultDto> {
    const existing = await this.repo.find(body.buyer, body.nonce);
    if (existing) {
      if (existing.checkoutSessionId !== id) throw new AppError('invalid_request', 'This authorization belongs to another checkout', { reason: 'wrong_terms' });
      if (existing.status === 'failed') return this.takeOverFailed(existing, body);
      return this.answer(existing, body);
    }
    let prepared: { buyer: string; data: string };
    try {
      prepared = await this.prepareFunding(id, body);
    } catch (err) {
      // A twin may have reserved and relayed this authorization after the read above: its relay is
      // why the chain (or the checkout's state) now refuses it, and this call answers that relay.
      const twin = err instanceof AppError ? await this.repo.find(body.buyer, body.nonce) : null;
      if (twin && twin.checkoutSessionId === id && twin.status !== 'failed') return this.answer(twin, body);
      throw err;
    }
    await this.relayer.assertFunded(); // 503 unavailable before anything is stored (DESIGN §18)
    const rowId = uuidv7();
    const created = await this.repo.reserve({
      id: rowId,
      checkoutSessionId: id,
      buyer: prepared.buyer,
      nonce: body.nonce,
      validAfter: BigInt(body.validAfter),
      validBefore: BigInt(body.validBefore),
      signature: body.signature,
    });
    if (!created) return this.answer((await this.repo.find(body.buyer, body.nonce))!, body);
    return this.send(rowId, id, prepared.data);
  }

  /**
   * GET /checkout/{id}/actions/{action}?actor=: the EIP-712 EscrowAction the buyer signs (random nonce,
   * deadline 10 minutes after chain time).
   * @throws AppError not_found; 403 forbidden when `actor` is not the escrow's buyer; 409 when the state does not allow it.
   */
  async actionTypedData(id: string, action: BuyerAction, actor: string): Promise<ActionTypedDataDto> {
    const escrow = await this.buyerEscrow(id, action, actor);
    const deadline = (await this.chain.headTimestamp()) + ACTION_VALIDITY_SECONDS;
    const domain = this.chain.gateway.escrowDomain(this.chain.chainId);
    const message = { escrowId: escrow.escrowKey, action: ESCROW_ACTION_CODES[action], actor: getAddress(actor.toLowerCase()), nonce: hexlify(randomBytes(32)), deadline };
    return { typedData: jsonSafe({ domain, types: { EIP712Domain: domainType(domain), ...ESCROW_ACTION_TYPES }, primaryType: 'EscrowAction', message }) as unknown as ActionTypedDataDto['typedData'] };
  }

  /**
   * POST /checkout/{id}/actions: relays the buyer's signed EscrowAction (…BySig, contract v2). Checked
   * before anything is sent: the signature recovers to `actor`, the actor is the escrow's buyer, the
   * state allows the action, and a simulated call succeeds. The indexer picks the event up.
   * @throws AppError not_found; 400 bad_signature | expired; 403 forbidden; 409 invalid_state.
   */
  async relayAction(id: string, body: RelayActionDto): Promise<ActionResultDto> {
    const escrow = await this.buyerEscrow(id, body.action, body.actor);
    const domain = this.chain.gateway.escrowDomain(this.chain.chainId);
    const actor = getAddress(body.actor.toLowerCase());
    const message = { escrowId: escrow.escrowKey, action: ESCROW_ACTION_CODES[body.action], actor, nonce: body.nonce, deadline: body.deadline };
    let signer: string;
    try {
      signer = verifyTypedData(domain, ESCROW_ACTION_TYPES, message, body.signature);
    } catch {
      throw new AppError('invalid_request', 'The signature is not a valid EIP-712 signature', { reason: 'bad_signature' });
    }
    if (signer !== actor) throw new AppError('invalid_request', 'The signature does not match this action', { reason: 'bad_signature' });
    const data = this.chain.gateway.encodeActBySig({ escrowKey: escrow.escrowKey, action: body.action, actor, nonce: body.nonce, deadline: body.deadline, signature: body.signature });
    try {
      await this.chain.gateway.simulate(this.chain.relayer.address, this.chain.gateway.escrowAddress, data, `${body.action}BySig`);
    } catch (err) {
      throw simulationRefusal(err);
    }
    try {
      // One live relay per intent (DESIGN §22): a buyer action is keyed by (actor, nonce), like funding, so
      // copies of one signed action share one relayer row and one transaction.
      const reference = `${actor.toLowerCase()}:${body.nonce.toLowerCase()}`;
      const { txHash } = await this.relayer.relay({ to: this.chain.gateway.escrowAddress, data, purpose: `buyer-${body.action}`, reference });
      return { status: 'broadcast', txHash };
    } catch (err) {
      if (err instanceof RelayTimeoutError) throw new AppError('unavailable', 'The relayer is busy; the action is queued and will be sent', { relayTxId: err.relayTxId }, 503);
      throw buyerRefusal(err);
    }
  }

  /** The escrow of checkout `id`, checked for a buyer `action` by `actor`. */
  private async buyerEscrow(id: string, action: BuyerAction, actor: string) {
    const session = await this.checkouts.findById(id);
    if (!session) throw AppError.notFound('checkout session');
    const escrow = session.escrowId ? await this.escrows.buyerView(session.escrowId) : null;
    if (!escrow) throw AppError.invalidState('checkout session', this.mapper.toDto(session).status, ['funded']);
    if (escrow.buyer.toLowerCase() !== actor.toLowerCase()) {
      throw new AppError('forbidden', 'Only the wallet that funded this escrow can do this', { reason: 'not_buyer' });
    }
    const allowed = ESCROW_ACTIONS[action].from as readonly string[];
    if (!allowed.includes(escrow.status)) throw AppError.invalidState('escrow', escrow.status, allowed);
    return escrow;
  }

  /** Every check of a funding relay before it is stored; returns the relayer calldata. */
  private async prepareFunding(id: string, body: RelayFundingDto): Promise<{ buyer: string; data: string }> {
    const funding = await this.escrows.fundingTerms(id, body.buyer);
    const terms: FundingTerms = EscrowService.toChainTerms(funding);
    const request = await this.chain.gateway.receiveAuthorizationRequest(body.buyer, terms, {
      validAfter: BigInt(body.validAfter),
      validBefore: BigInt(body.validBefore),
    });
    if (request.message.nonce.toLowerCase() !== body.nonce.toLowerCase()) {
      throw new AppError('invalid_request', 'These are not the payment terms of this checkout; reload and sign again', { reason: 'wrong_terms' });
    }
    let auth;
    try {
      auth = this.chain.gateway.authorizationFromSignature(request, body.signature);
    } catch {
      throw new AppError('invalid_request', 'The signature does not match this payment', { reason: 'bad_signature' });
    }
    if (BigInt(body.validBefore) <= BigInt(await this.chain.headTimestamp())) {
      throw new AppError('invalid_request', 'The signature has expired; sign again', { reason: 'expired' });
    }
    const data = this.chain.gateway.encodeFundWithAuthorization(terms, funding.termsSignature!, auth);
    try {
      await this.chain.gateway.simulate(this.chain.relayer.address, this.chain.gateway.escrowAddress, data, 'fundWithAuthorization');
    } catch (err) {
      throw simulationRefusal(err);
    }
    return { buyer: request.message.from, data };
  }

  /** Hands a reserved relay to the relayer queue and records the outcome. */
  private async send(rowId: string, checkoutId: string, data: string): Promise<RelayResultDto> {
    try {
      const { relayTxId, txHash } = await this.relayer.relay({ to: this.chain.gateway.escrowAddress, data, purpose: 'checkout-funding', reference: rowId });
      await this.repo.markBroadcast(rowId, relayTxId, txHash);
      return { status: 'broadcast', txHash, escrowId: await this.escrowIdOf(checkoutId) };
    } catch (err) {
      if (err instanceof RelayTimeoutError) {
        await this.repo.markQueued(rowId, err.relayTxId);
        return { status: 'reserved', txHash: null, escrowId: null };
      }
      if (err instanceof ChainTxError) {
        this.logger.warn({ relayId: rowId, reason: err.errorName ?? err.message }, 'checkout funding relay refused by the chain');
        await this.repo.markFailed(rowId, err.errorName ?? err.message);
        throw buyerRefusal(err);
      }
      throw err;
    }
  }

  /**
   * The stored relay as an answer: finished once funded; a broadcast the node no longer knows is sent
   * again; a twin waits for a fresh reservation; a stale one is taken over by a caller whose own body
   * re-validates fully (an invalid body is a 400 that changes no row, §16/§18).
   */
  private async answer(row: CheckoutRelayRow, body: RelayFundingDto): Promise<RelayResultDto> {
    const deadline = Date.now() + TWIN_WAIT_MS;
    let current: CheckoutRelayRow = row;
    if (current.status === 'broadcast' && current.txHash && !(await this.escrowIdOf(current.checkoutSessionId))) {
      // The node failing the check (DESIGN §22) leaves the relay as it stands: answered `broadcast`, checked again next time.
      current = await this.recheckBroadcast(current).catch((err: unknown) => {
        if (err instanceof ChainUnavailableError) return current;
        throw err;
      });
    }
    while (current.status === 'reserved' && !current.relayTxId && Date.now() < deadline) {
      if (current.updatedAt.getTime() < Date.now() - STALE_RESERVATION_SECONDS * 1000) {
        const prepared = await this.prepareFunding(current.checkoutSessionId, body);
        if (await this.repo.claimStale(current.id, STALE_RESERVATION_SECONDS, authorizationOf(body))) {
          this.logger.warn({ relayId: current.id }, 'taking over a reservation left behind; relaying it');
          return this.send(current.id, current.checkoutSessionId, prepared.data);
        }
      }
      await new Promise((r) => setTimeout(r, 100));
      current = (await this.repo.find(row.buyer, row.nonce))!;
    }
    if (current.status === 'reserved' && current.relayTxId) {
      // Handed to the relayer queue, not known to be broadcast (a crash after "signed", or a slow queue):
      // the queue sends the same signed transaction again.
      try {
        const { txHash } = await this.relayer.resume(current.relayTxId);
        await this.repo.markBroadcast(current.id, current.relayTxId, txHash);
        current = (await this.repo.find(row.buyer, row.nonce))!;
      } catch (err) {
        if (!(err instanceof RelayTimeoutError)) {
          if (err instanceof ChainTxError) {
            // The relayer failed it for good at send time (e.g. the USDC moved away while it waited): that
            // refusal describes the chain as it was then. The row fails, and this caller's own body, fully
            // re-validated against the chain as it is now, takes it over (issue 29 finding 8).
            await this.repo.markFailed(current.id, err.errorName ?? err.message);
            return this.takeOverFailed({ ...current, status: 'failed' }, body);
          }
          throw err;
        }
      }
    }
    if (current.status === 'failed') {
      throw new AppError('invalid_request', 'This payment was refused by the chain; sign again', { reason: 'rejected', chainError: current.error });
    }
    const escrowId = await this.escrowIdOf(current.checkoutSessionId);
    return { status: escrowId ? 'finished' : current.status, txHash: current.txHash, escrowId };
  }

  /**
   * A `failed` relay row of (buyer, nonce) meets a new request: the same terms digest is the nonce when
   * the buyer signs again, so a fully re-validated request (signature, terms, a successful simulation
   * now) takes the failed row over and is relayed; an invalid one is the 400 of today's chain and changes
   * nothing (DESIGN §18 "Public relay"). One caller wins the row; the others answer it.
   * @throws AppError 400 (`details.reason` as {@link buyerRefusal}) when the body no longer validates.
   */
  private async takeOverFailed(row: CheckoutRelayRow, body: RelayFundingDto): Promise<RelayResultDto> {
    const prepared = await this.prepareFunding(row.checkoutSessionId, body);
    if (await this.repo.takeOverFailed(row.id, authorizationOf(body))) {
      this.logger.warn({ relayId: row.id }, 'a re-validated request takes over a failed relay');
      return this.send(row.id, row.checkoutSessionId, prepared.data);
    }
    return this.answer((await this.repo.find(body.buyer, body.nonce))!, body);
  }

  /**
   * A broadcast relay whose transaction the node no longer knows (dropped from its pool): while the
   * relayer still carries its transaction, the relayer resends it (answered with its newest hash);
   * once the relayer gave it up and `authorizationState` says the buyer's authorization is still
   * unused, the stored authorization is re-validated and relayed again (one caller wins the row);
   * when it no longer validates (expired, funds moved) the row fails, so a re-validated request may
   * take it over. Used already: left as is, the indexer records the funding.
   */
  private async recheckBroadcast(row: CheckoutRelayRow): Promise<CheckoutRelayRow> {
    // A node error is not "unknown to the node": both reads answer, or the check is left for later (ChainUnavailableError).
    if (await this.chain.read('funding transaction', () => this.chain.provider.getTransaction(row.txHash!))) return row;
    if (await this.chain.read('authorization state', () => this.chain.usdc.authorizationState(row.buyer, row.nonce))) return row;
    // A relayer transaction that is not failed is the relayer's to finish: its stored bytes go to the
    // node again now (same nonce, same hash), and its tender fills the nonce and fails it when the call
    // is dead (DESIGN §18). Signing the payload anew beside it would race that, so answer its hash.
    const carried = row.relayTxId ? await this.relayer.resendDropped(row.relayTxId) : null;
    if (carried) return { ...row, txHash: carried.txHash ?? row.txHash };
    if (!(await this.repo.reclaimDropped(row.id, row.txHash!))) return (await this.repo.find(row.buyer, row.nonce))!;
    this.logger.warn({ relayId: row.id, txHash: row.txHash }, 'the node no longer knows the funding transaction and the authorization is unused; relaying it again');
    const stored = await this.repo.storedAuthorization(row.id);
    const storedBody: RelayFundingDto = { buyer: row.buyer, nonce: row.nonce, validAfter: stored.validAfter.toString(), validBefore: stored.validBefore.toString(), signature: stored.signature };
    let prepared: { data: string };
    try {
      prepared = await this.prepareFunding(row.checkoutSessionId, storedBody);
    } catch (err) {
      if (err instanceof AppError) await this.repo.markFailed(row.id, err.message);
      throw err;
    }
    await this.send(row.id, row.checkoutSessionId, prepared.data);
    return (await this.repo.find(row.buyer, row.nonce))!;
  }

  private async escrowIdOf(checkoutId: string): Promise<string | null> {
    return (await this.checkouts.findById(checkoutId))?.escrowId ?? null;
  }
}
