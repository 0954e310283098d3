import { Injectable } from '@nestjs/common';
import { ChainTxError, FundingTerms, type EscrowPartyAction } from '@lib/chain';
import { formatAmount } from '@lib/money';
import { Signature, type Wallet } from 'ethers';
import type { Principal } from '../../kernel/auth/principal';
import { AppError } from '../../common/errors/app-error';
import { ListPage, toPage } from '../../common/http/list.dto';
import type { IdempotentWork, RowOwnedWork } from '../../kernel/idempotency/idempotency.service';
import { AppConfig } from '../../config/app-config';
import { AgentSpendGate } from '../agents/agent-spend.service';
import { SignerVault } from '../agents/signer-vault.service';
import { CheckoutService, inspectionWindowSeconds } from '../checkout/checkout.service';
import { checkoutEscrowKey } from '../checkout/checkout-escrow-key';
import { EscrowChainService } from '../escrow/escrow-chain.service';
import { EscrowProjector } from '../escrow/escrow-projector.service';
import { ESCROW_ACTIONS } from '../escrow/escrow.state';
import { PaymentModes } from '../payments/payment-modes';
import { mapOwned, PaymentModeHandler, PaymentRecord as Payment, PaymentsService, StoredAuthorization } from '../payments/payments.service';
import { RelayerService, RelayRequest, RelayTimeoutError } from '../../chain/relayer/relayer.service';
import { AgentEscrowDto } from './dto/agent-escrow.dto';

/** The agent's escrow actions (extension routes), each relayed as the signer's EscrowAction. */
export type AgentEscrowAction = 'release' | 'dispute' | 'cancel';

/** What an agent escrow action's checks hand to its chain step. */
export interface PreparedAct {
  escrowKey: string;
}

/**
 * Agent escrows (docs/architecture.md §13): a checkout session in the payee organisation whose escrow
 * has the agent's session signer as buyer, funded by the signer's receiveWithAuthorization under
 * buyer-bound terms (contract v2) and recorded as a Payment `mode: "escrow"` that counts toward the
 * policy. The agent releases, disputes or cancels through signed EscrowActions the relayer submits;
 * the seller's side is the ordinary escrow API.
 */
@Injectable()
export class AgentEscrowsService implements PaymentModeHandler {
  constructor(
    private readonly payments: PaymentsService,
    private readonly checkout: CheckoutService,
    private readonly escrowChain: EscrowChainService,
    private readonly projector: EscrowProjector,
    private readonly relayer: RelayerService,
    private readonly vault: SignerVault,
    private readonly agents: AgentSpendGate,
    private readonly config: AppConfig,
    modes: PaymentModes,
  ) {
    // The mode table's `escrow` handler (issue 28): without this module a process does not start.
    modes.provide('escrow', this);
  }

  /**
   * POST /agent-escrows (operation `create-agent-escrow`, row-owned): the same refusals and
   * reservation as a payment, plus the checkout session (created in the reservation's
   * transaction), then the signed funding relayed. Run it through the idempotency service.
   * @throws AppError as PaymentsService.payWork; 400 when `to` is not an organisation.
   */
  createWork(principal: Principal, body: { to: string; amount: string; description: string; escrowTemplateId?: string }, key: string | undefined): RowOwnedWork<Payment> {
    const work = this.payments.spendWork(principal, { to: body.to, amount: body.amount, mode: 'escrow' }, key, {
      organizationsOnly: true,
      extra: { description: body.description, escrowTemplateId: body.escrowTemplateId ?? 'custom' },
    });
    return mapOwned(work, (p) => this.render(p));
  }

  async get(principal: Principal, id: string): Promise<AgentEscrowDto> {
    return this.render(await this.require(principal, id));
  }

  async list(principal: Principal, q: { limit?: number; startingAfter?: string }): Promise<ListPage<AgentEscrowDto>> {
    const limit = q.limit ?? 10;
    const rows = await this.payments.listForAgent(principal.agentId!, { limit, startingAfter: q.startingAfter, mode: 'escrow' });
    const page = toPage(rows, limit, (r) => r);
    return { ...page, data: await Promise.all(page.data.map((p) => this.render(p))) };
  }

  /**
   * release | dispute | cancel as the agent (operations `<action>-agent-escrow`, key required), as
   * work for the idempotency service: checks first (404 → confirm, then in `prepare` the agent
   * refusals → state 409, recorded under the key), an in-flight claim committed under the key's
   * lock, then with no transaction open the signer signs an EscrowAction, the relayer submits
   * `…BySig`, the API verifies the receipt (event `by` = the signer) and applies it through the
   * escrow projector; the answer replaces the claim. So same-key twins relay once (DESIGN §5): they
   * get 409 in flight, then the replay.
   * @throws AppError 400 confirm_required, 404 (at once); 403 agent refusals, 409 (state, or the
   *   contract refused) as the work's outcome.
   */
  async actWork(principal: Principal, id: string, action: AgentEscrowAction, body: { confirm?: unknown }): Promise<IdempotentWork<PreparedAct, PreparedAct>> {
    const payment = await this.require(principal, id);
    const rule = ESCROW_ACTIONS[action];
    if (rule.confirm && body.confirm !== true) {
      throw new AppError('confirm_required', `${action} moves or locks money: send "confirm": true`, { fields: [{ param: 'confirm', message: 'must be true' }] });
    }
    const check = async (): Promise<PreparedAct> => {
      const agent = await this.agents.find(principal.agentId!);
      if (!agent) throw AppError.notFound('agent');
      this.payments.checkAgent(agent);
      const session = await this.checkout.findById(payment.checkoutSessionId!);
      if (!session) throw AppError.notFound('agent escrow');
      if (!(rule.from as readonly string[]).includes(session.status)) throw AppError.invalidState('escrow', session.status, rule.from);
      return { escrowKey: checkoutEscrowKey(session) };
    };
    return {
      prepare: check,
      // Under the key's lock: the state again, as it stands now (a twin may have finished meanwhile).
      run: () => check(),
      after: async ({ escrowKey }) => {
        const signer = await this.vault.wallet(payment.agentId);
        const gateway = this.escrowChain.gateway;
        const signed = await gateway.signEscrowAction(signer, action as EscrowPartyAction, escrowKey, { now: await this.escrowChain.clock.headTimestamp() });
        let txHash: string;
        let relayTxId: string;
        try {
          ({ txHash, relayTxId } = await this.relayer.relay({ to: gateway.escrowAddress, data: gateway.encodeActBySig(signed), purpose: `agent_escrow_${action}`, reference: payment.id }));
        } catch (err) {
          if (err instanceof RelayTimeoutError) throw new AppError('invalid_request', 'The relayer did not broadcast in time; retry with the same key', { reason: 'pending' }, 409);
          if (err instanceof ChainTxError) throw new AppError('invalid_request', `The escrow contract refused ${action}: ${err.message}`, { reason: 'chain_refused', error: err.errorName }, 409);
          throw err;
        }
        // Any hash the relay signed (a fee bump replaces the first; DESIGN §18), bounded by CHAIN_WAIT_MS.
        const mined = await this.relayer.waitMined(relayTxId, this.config.env.CHAIN_WAIT_MS);
        if (!mined) {
          // Not stored: a retry with the same key runs again; the indexer applies the action once it is mined.
          throw new AppError('invalid_request', `${action} was broadcast but not mined within CHAIN_WAIT_MS; retry with the same key`, { reason: 'pending', txHash }, 409);
        }
        txHash = mined.hash;
        const verified = await this.escrowChain.verify(txHash, escrowKey, rule.event, [payment.fromAddress]);
        await this.projector.apply(verified.event, verified.by);
        return { escrow: await this.render(payment), txHash };
      },
    };
  }

  /**
   * In the reservation transaction: the checkout session in the payee organisation (default TTL,
   * CHECKOUT_DEFAULT_TTL_SECONDS; the terms and the signer's authorization expire with it).
   */
  async onReserved(payment: Payment, extra: Record<string, unknown>): Promise<void> {
    const payee = await this.agents.resolveHandle(payment.toHandle);
    if (!payee || payee.kind !== 'organization') throw AppError.invalidParam('to', 'must be an organisation handle');
    const seller: Principal = { kind: 'merchant', credentialId: 'agent-escrow', organizationId: payee.organizationId, agentId: null, actor: `agent:${payment.agentId}`, grantedScopes: [], scopes: new Set() };
    const session = await this.checkout.create(seller, {
      amount: formatAmount(payment.amount),
      description: String(extra.description),
      escrowTemplateId: extra.escrowTemplateId as 'custom',
      metadata: { agentId: payment.agentId, agentPaymentId: payment.id },
    });
    await this.payments.attachCheckout(payment, session.id);
  }

  /** The signer's ReceiveWithAuthorization into the escrow for the buyer-bound terms (nonce = terms digest). */
  async authorize(payment: Payment, signer: Wallet): Promise<StoredAuthorization> {
    const terms = await this.terms(payment);
    const auth = await this.escrowChain.gateway.signReceiveAuthorization(signer.connect(this.escrowChain.provider), terms);
    return { nonce: auth.nonce, validBefore: Number(auth.validBefore), signature: auth.signature };
  }

  /** fundWithAuthorization with the stored authorization and freshly signed (deterministic) terms. */
  async relayRequest(payment: Payment): Promise<RelayRequest> {
    const terms = await this.terms(payment);
    const gateway = this.escrowChain.gateway;
    const sig = Signature.from(payment.authSignature!);
    const data = gateway.encodeFundWithAuthorization(terms, await this.escrowChain.signTerms(terms), {
      from: payment.fromAddress,
      to: gateway.escrowAddress,
      value: payment.amount,
      validAfter: 0n,
      validBefore: BigInt(payment.authValidBefore!),
      nonce: payment.authNonce!,
      signature: sig.serialized,
      v: sig.v,
      r: sig.r,
      s: sig.s,
    });
    return { to: gateway.escrowAddress, data, purpose: 'agent_escrow_fund', reference: payment.id };
  }

  private async terms(payment: Payment): Promise<FundingTerms> {
    const session = await this.checkout.findById(payment.checkoutSessionId!);
    if (!session) throw new Error(`agent escrow ${payment.id} has no checkout session`);
    return {
      escrowKey: checkoutEscrowKey(session),
      buyer: payment.fromAddress,
      seller: payment.toAddress,
      amount: payment.amount,
      inspectionWindow: inspectionWindowSeconds(session.escrowTemplateId, session.metadata),
      deadline: Math.floor(session.expiresAt.getTime() / 1000),
    };
  }

  private async require(principal: Principal, id: string): Promise<Payment> {
    const p = await this.payments.findForAgent(principal.agentId!, id);
    if (!p || p.mode !== 'escrow' || !p.checkoutSessionId) throw AppError.notFound('agent escrow');
    return p;
  }

  private async render(p: Payment): Promise<AgentEscrowDto> {
    const session = p.checkoutSessionId ? await this.checkout.findById(p.checkoutSessionId) : null;
    return {
      id: p.id,
      status: p.status,
      to: p.toHandle,
      toAddress: p.toAddress,
      buyerAddress: p.fromAddress,
      amount: formatAmount(p.amount),
      checkoutSessionId: p.checkoutSessionId!,
      escrowId: session?.escrowId ?? null,
      escrowKey: session?.escrowId ? checkoutEscrowKey(session) : null,
      escrowStatus: session?.status ?? 'open',
      txHash: p.txHash,
      failureReason: p.failureReason,
      createdAt: p.createdAt.toISOString(),
      updatedAt: p.updatedAt.toISOString(),
    };
  }
}
