import { Injectable, Logger } from '@nestjs/common';
import { ChainTxError, isNodeError } from '@lib/chain';
import { AmountFormatError, formatAmount, parseAmount } from '@lib/money';
import { getAddress, isAddress } from 'ethers';
import { v7 as uuidv7 } from 'uuid';
import type { Principal } from '../../kernel/auth/principal';
import { AppError } from '../../common/errors/app-error';
import { ListPage, toPage } from '../../common/http/list.dto';
import { canonicalJson, sha256Hex } from '../../kernel/idempotency/fingerprint';
import type { RowOwnedWork } from '../../kernel/idempotency/idempotency.service';
import { VerificationService } from '../verification/verification.service';
import { AppConfig } from '../../config/app-config';
import { TransactionHost, TxHost } from '../../database/transaction';
import { evaluatePolicy, policyWindows } from '../agents/agent-policy';
import type { AgentRow, PayeeTarget } from '../agents/agent.types';
import { AgentSpendGate } from '../agents/agent-spend.service';
import { SignerVault } from '../agents/signer-vault.service';
import { MandatesService } from '../mandates/mandates.service';
import { OrgsService } from '../orgs/orgs.service';
import { ChainAccess, ChainUnavailableError } from '../../chain/chain-access.service';
import { RelayerService, RelayTimeoutError } from '../../chain/relayer/relayer.service';
import { PaymentDto } from './dto/payment.dto';
import { Payment, PaymentMode, PaymentStatus } from './payment.entity';
import { PaymentsRepository } from './payments.repository';
import type { ReceivedMoney } from './received-money';
import { PaymentModes } from './payment-modes';

export { PAYMENT_RELAY_PURPOSE, PAYMENT_VALIDITY_SECONDS } from './transfer-payment-mode';
export type { PaymentModeHandler, StoredAuthorization } from './payment-modes';

/**
 * An x402 payment addressed to a raw address (a payTo of another server's challenge) is handed to the
 * agent as a payment header and never relayed by us (docs/architecture.md §14). Handles cannot look like
 * addresses (3–40 of a-z, 0-9, -), so the stored `to` tells the two x402 kinds apart after a restart.
 */
export function holdsAuthorization(p: Pick<Payment, 'mode' | 'toHandle'>): boolean {
  return p.mode === 'x402' && /^0x[0-9a-fA-F]{40}$/.test(p.toHandle);
}

/** A payee given by address (x402 payTo): no handle, no organisation. @throws AppError invalid_request for a bad address. */
function addressPayee(address: string): PayeeTarget & { address: string } {
  if (!isAddress(address)) throw AppError.invalidParam('payTo', 'must be a 0x-prefixed 20-byte hex address');
  const checksummed = getAddress(address.toLowerCase());
  return { kind: 'address', id: '', organizationId: '', handle: checksummed.toLowerCase(), address: checksummed };
}

/** The recovery points of a payment where a crash test may stop it. */
export type PaymentFaultPoint = 'after_reserve' | 'after_signed';

/**
 * Port for the crash proofs: {@link PaymentsService} calls `hit` right after committing a recovery
 * point. Bound to the no-op `NO_FAULTS` (common/faults) in production; crash tests provide one that throws
 * there, as if the process died right after the commit.
 */
export abstract class PaymentFaults {
  abstract hit(point: PaymentFaultPoint): void;
}

/** A spend request after validation: payee handle and base units. */
export interface SpendInput {
  to: string;
  amount: string;
  mode?: PaymentMode;
}

/** A payment row as other modules see it (through this service, never the entity file). */
export type PaymentRecord = Payment;

/**
 * Agent payments under policy (docs/architecture.md §13, §5). The refusal order (agents_disabled →
 * agent_paused → signer_required → kyb_rejected → mandate_required → policy_denied) and the
 * reservation run in one short transaction under the agent row lock, which inserts the payment
 * `pending` with UNIQUE(agent_id, idempotency_key); signing and relaying follow outside any
 * transaction, each recovery point committed, so a retry with the same key or the worker's sweep
 * resumes the same payment with the same authorization. Amounts are bigint base units. In policy mode
 * `mandate` the same transaction picks the covering AP2 mandate (docs/architecture.md §14) and stores
 * its id on the payment, so every spend path (instant, escrow, x402, A2A) is covered.
 */
@Injectable()
export class PaymentsService {
  private readonly logger = new Logger('Payments');

  constructor(
    private readonly verification: VerificationService,
    private readonly repo: PaymentsRepository,
    private readonly agents: AgentSpendGate,
    private readonly vault: SignerVault,
    private readonly chain: ChainAccess,
    private readonly relayer: RelayerService,
    private readonly txHost: TransactionHost,
    private readonly config: AppConfig,
    private readonly faults: PaymentFaults,
    private readonly mandates: MandatesService,
    private readonly modes: PaymentModes,
    private readonly orgs: OrgsService,
  ) {}

  private tx<T>(fn: () => Promise<T>): Promise<T> {
    return (this.txHost as TxHost).withTransaction(fn);
  }

  /**
   * POST /payments (operation `pay`, row-owned, DESIGN §5, §17): validates, refuses or reserves,
   * then signs and relays; answers once broadcast (`submitted`), or `pending` when the relayer could
   * not broadcast yet (the sweep resumes it). Run it through the idempotency service.
   * @throws AppError 400 (invalid amount; at run: unknown payee, no payout address), 403 in the
   *   refusal order with `details`, 422 idempotency_conflict (same key, other request).
   */
  payWork(principal: Principal, input: SpendInput, key: string | undefined): RowOwnedWork<Payment> {
    return mapOwned(this.spendWork(principal, { ...input, mode: 'instant' }, key, {}), (p) => this.toDto(p));
  }

  /**
   * The whole spend of any mode as row-owned work (DESIGN §5): the payment row with
   * UNIQUE(agent_id, idempotency_key) is the record; refusals are recorded by the idempotency
   * service under the key's lock. `prepare` resolves the payee and reads the signer's balance (no
   * transaction open); `reserve` runs the refusals and the reservation under the agent row lock;
   * `resume` signs and relays ({@link resume}). `opts.extra` reaches the mode's onReserved hook and
   * the fingerprint; `opts.organizationsOnly` refuses agent payees (agent escrows); `opts.taskId`
   * (A2A) stores the task id on the payment, which is UNIQUE per agent: a payment already made for
   * that task (under any key, or none) is the one this call owns, so the same terms return it and
   * others get 422.
   * @throws AppError 400 idempotency_required (no key and no task), invalid amount.
   */
  spendWork(
    principal: Principal,
    input: SpendInput,
    key: string | undefined,
    opts: { extra?: Record<string, unknown>; organizationsOnly?: boolean; taskId?: string; payToAddress?: boolean },
  ): RowOwnedWork<Payment> {
    const agentId = principal.agentId!;
    const mode = input.mode ?? 'instant';
    const taskId = opts.taskId ?? null;
    if (!key && !taskId) throw new AppError('idempotency_required', 'This payment requires an Idempotency-Key');
    const amount = this.parse(input.amount);
    const fingerprint = sha256Hex(canonicalJson({ to: input.to.toLowerCase(), amount: amount.toString(), mode, ...(opts.extra ?? {}), ...(taskId ? { taskId } : {}) }));
    const owned = async (): Promise<Payment | null> => (key ? await this.repo.findByKey(agentId, key) : null) ?? (taskId ? await this.repo.findByTask(agentId, taskId) : null);
    let created = false;
    return {
      fingerprint,
      owned: async () => {
        const p = await owned();
        return p ? { row: p, fingerprint: p.fingerprint } : null;
      },
      prepare: async () => {
        // x402 for another server (docs/architecture.md §14): the payee is the challenge's raw payTo address.
        const payee = opts.payToAddress ? addressPayee(input.to) : await this.resolvePayee(input.to);
        if (opts.organizationsOnly && payee.kind !== 'organization') {
          throw AppError.invalidParam('to', 'must be an organisation handle (agent escrows pay organisations)', { reason: 'not_an_organization' });
        }
        const agent = await this.agents.find(agentId);
        if (!agent) throw AppError.notFound('agent');
        this.checkAgent(agent);
        // A relayer without gas money refuses before the payment exists (DESIGN §18): a 503 never leaves a
        // payment behind that the sweep would still send.
        if (!holdsAuthorization({ mode, toHandle: opts.payToAddress ? input.to : '' })) await this.relayer.assertFunded();
        // Read before the transaction (no RPC while it is open); exact once combined with the usage under the lock.
        return { payee, signerBalance: await this.agents.signerBalance(agent.signerAddress!) };
      },
      reserve: (prepared) =>
        this.tx(async () => {
          const { payee, signerBalance } = prepared as { payee: PayeeTarget & { address: string }; signerBalance: Awaited<ReturnType<AgentSpendGate['signerBalance']>> };
          const locked = (await this.agents.lock(agentId))!;
          const twin = await owned();
          if (twin) return { row: twin, fingerprint: twin.fingerprint, created: false };
          this.checkAgent(locked);
          await this.organizationGate(locked.organizationId);
          const now = new Date();
          // Mandate mode (docs/architecture.md §14): the covering active mandate expiring first, its usage
          // summed under this same agent row lock (§13), so concurrent spends never exceed totalAmount.
          let mandateId: string | null = null;
          if (locked.policy?.mode === 'mandate') {
            mandateId = await this.mandates.cover(agentId, { handle: payee.handle, address: payee.address }, amount, now);
            if (!mandateId) {
              throw new AppError('mandate_required', 'This agent pays only under an active mandate covering the payee and amount', { mode: 'mandate', to: payee.handle, requested: formatAmount(amount) });
            }
          }
          const { dayStart, monthStart } = policyWindows(now);
          const usage = await this.repo.agentUsage(agentId, dayStart, monthStart, signerBalance.settledNonces ?? [], signerBalance.trustedBlock);
          const onChain = signerBalance.onChain;
          const refusal = evaluatePolicy(locked.policy, {
            amount,
            toHandle: payee.handle,
            toAddress: payee.address,
            now,
            usedToday: usage.usedToday,
            usedThisMonth: usage.usedThisMonth,
            available: onChain > usage.open ? onChain - usage.open : 0n,
          });
          if (refusal) throw new AppError('policy_denied', refusal.message, refusal.details);
          const payment = Object.assign(new Payment(), {
            id: uuidv7(),
            agentId,
            organizationId: locked.organizationId,
            idempotencyKey: key ?? null,
            fingerprint,
            status: 'pending' as PaymentStatus,
            mode,
            toHandle: payee.handle,
            toAddress: payee.address,
            fromAddress: locked.signerAddress!,
            amount,
            fee: 0n,
            authNonce: null,
            authValidBefore: null,
            authSignature: null,
            relayTxHashes: [],
            txHash: null,
            mandateId,
            taskId,
            checkoutSessionId: null,
            failureReason: null,
            createdAt: now,
            updatedAt: now,
          });
          // The mode table fails closed (issue 28): a mode without its handler here refuses before any row.
          const handler = this.modes.get(mode);
          await this.repo.insert(payment);
          await handler.onReserved?.(payment, opts.extra ?? {});
          created = true;
          return { row: payment, fingerprint, created: true };
        }),
      resume: async (payment) => {
        if (created) this.faults.hit('after_reserve');
        try {
          return await this.resume(payment);
        } catch (err) {
          // Reserved already: a chain read the node failed answers the payment as it stands (DESIGN §22),
          // never a 500; the same key, or the sweep, moves it on.
          if (!(err instanceof ChainUnavailableError) && !isNodeError(err)) throw err;
          this.logger.warn({ paymentId: payment.id, error: (err as Error).message?.slice(0, 200) }, 'chain read failed while resuming; answering the payment as it stands');
          return (await this.repo.findById(payment.id)) ?? payment;
        }
      },
    };
  }

  /** Links a payment to its agent escrow's checkout session; call from a mode's onReserved hook. */
  async attachCheckout(payment: Payment, checkoutSessionId: string): Promise<void> {
    await this.repo.attachCheckout(payment.id, checkoutSessionId);
    payment.checkoutSessionId = checkoutSessionId;
  }

  /** A payment of the agent, or null (any mode). */
  async findForAgent(agentId: string, id: string): Promise<Payment | null> {
    const p = await this.repo.findById(id);
    return p && p.agentId === agentId ? p : null;
  }

  /** The agent's payments of `mode`, newest first. */
  listForAgent(agentId: string, q: { limit: number; startingAfter?: string; mode?: PaymentMode }): Promise<Payment[]> {
    return this.repo.list(agentId, q);
  }

  /**
   * GET /payments/{id}: for the paying agent, or (read-only, DESIGN §21) for the organisation that
   * received it (a merchant credential with refund:read), so its payee can refund it.
   * @throws AppError not_found.
   */
  async get(principal: Principal, id: string): Promise<PaymentDto> {
    const p = principal.agentId ? await this.repo.findById(id) : await this.findReceived(id, principal.organizationId);
    if (!p || (principal.agentId && p.agentId !== principal.agentId)) throw AppError.notFound('payment');
    return this.toDto(p);
  }

  /** The payment `id` when `organizationId` received it (paid to its handle; the handle through OrgsService, DESIGN §21), or null. */
  private async findReceived(id: string, organizationId: string): Promise<Payment | null> {
    const handle = (await this.orgs.getOrganization(organizationId))?.handle;
    return handle ? this.repo.findReceivedBy(id, handle) : null;
  }

  /**
   * The payment `id` received by `organizationId`, locked FOR UPDATE until the caller's transaction
   * ends (the refund bound's lock, DESIGN §21), or null when there is none. Must run in a transaction.
   */
  async lockReceived(id: string, organizationId: string): Promise<ReceivedMoney | null> {
    const handle = (await this.orgs.getOrganization(organizationId))?.handle;
    return handle ? this.repo.lockReceivedBy(id, handle) : null;
  }

  async list(principal: Principal, q: { limit?: number; startingAfter?: string; status?: PaymentStatus }): Promise<ListPage<PaymentDto>> {
    return this.pageForAgent(principal.agentId!, q);
  }

  /**
   * The payments of agent `agentId`, newest first (GET /payments for its key; the console's agent
   * page once AgentsService.requireOwned has checked the session may see it).
   */
  async pageForAgent(agentId: string, q: { limit?: number; startingAfter?: string; status?: PaymentStatus }): Promise<ListPage<PaymentDto>> {
    const limit = q.limit ?? 10;
    const rows = await this.repo.list(agentId, { limit, startingAfter: q.startingAfter, status: q.status });
    return toPage(rows, limit, (p) => this.toDto(p));
  }

  /**
   * Moves a payment forward from its last recovery point (docs/architecture.md §5), outside any
   * transaction: signs the authorization once (unless agents are disabled: then a payment still unsigned
   * when the write lands fails `agents_disabled`; one signed meanwhile is cancelled like any signed one), then relays it unless the chain already used it or it is dead. With AGENTS_ENABLED=false a
   * signed, unused authorization is cancelled instead. Relay errors leave the payment as it was (it
   * keeps counting toward the policy until used, cancelled or expired).
   * @returns the payment as it is afterwards.
   */
  async resume(payment: Payment): Promise<Payment> {
    let p = payment;
    if (p.status === 'succeeded' || p.status === 'failed') return p;
    // Fails closed (issue 28): a mode without its handler in this process is neither signed nor relayed.
    const handler = this.modes.get(p.mode);
    if (!p.authNonce && !this.config.env.AGENTS_ENABLED) {
      // Another process may have signed it since it was read: then it is cancelled below, never failed here.
      if (await this.tx(() => this.repo.failUnsigned(p.id, 'agents_disabled'))) return (await this.repo.findById(p.id))!;
      p = (await this.repo.findById(p.id))!;
      if (!p.authNonce || p.status === 'succeeded' || p.status === 'failed') return p;
    }
    if (!p.authNonce) {
      const signer = await this.vault.wallet(p.agentId);
      const auth = await handler.authorize(p, signer);
      await this.tx(() => this.repo.storeAuthorization(p.id, { nonce: auth.nonce.toLowerCase(), validBefore: auth.validBefore, signature: auth.signature }));
      p = (await this.repo.findById(p.id))!;
      if (!p.authNonce) return p;
      this.faults.hit('after_signed');
    }
    // Used and chain time read at one block, head − CONFIRMATIONS (issue 29 finding 6, DESIGN §18).
    const state = await this.chain.authorizationAt(p.fromAddress, p.authNonce!);
    if (state.used) {
      if (p.status === 'pending') await this.tx(() => this.repo.touch(p.id));
      return (await this.repo.findById(p.id))!;
    }
    if (state.timestamp >= p.authValidBefore!) {
      await this.tx(() => this.repo.markFailed(p.id, 'expired'));
      return (await this.repo.findById(p.id))!;
    }
    if (!this.config.env.AGENTS_ENABLED) {
      await this.cancelAuthorization(p);
      return (await this.repo.findById(p.id))!;
    }
    if (holdsAuthorization(p)) {
      // x402 for another server: the signed authorization is the agent's to send; that server's
      // facilitator uses it, and the indexer marks the payment succeeded (or failed once expired, above).
      if (p.status === 'pending') await this.tx(() => this.repo.markHanded(p.id));
      return (await this.repo.findById(p.id))!;
    }
    try {
      const { txHash } = await this.relayer.relay(await handler.relayRequest(p));
      await this.tx(() => this.repo.markSubmitted(p.id, txHash));
    } catch (err) {
      if (!(err instanceof ChainTxError) && !(err instanceof RelayTimeoutError)) throw err;
      if (await this.chain.usdc.authorizationState(p.fromAddress, p.authNonce!)) {
        await this.tx(() => this.repo.touch(p.id));
      } else {
        this.logger.warn({ paymentId: p.id, error: err.message }, 'payment relay failed; it stays reserved until used, cancelled or expired');
        await this.tx(() => this.repo.touch(p.id));
      }
    }
    return (await this.repo.findById(p.id))!;
  }

  /**
   * Relays the signer's cancelAuthorization of an unused authorization (kill switch) and waits at most
   * CHAIN_WAIT_MS for it; the indexer marks the payment failed once it is mined. Not mined in time (or
   * dropped): the payment stays as it is and the sweep tries again.
   */
  private async cancelAuthorization(p: Payment): Promise<void> {
    const signer = await this.vault.wallet(p.agentId);
    const data = await this.chain.usdc.encodeCancelAuthorization(signer, p.authNonce!);
    try {
      const { relayTxId, txHash } = await this.relayer.relay({ to: this.chain.usdc.address, data, purpose: 'cancel_authorization', reference: p.id });
      if (!(await this.relayer.waitMined(relayTxId, this.config.env.CHAIN_WAIT_MS))) {
        this.logger.warn({ paymentId: p.id, txHash }, 'cancelAuthorization not mined in time; the sweep resumes the payment');
      }
    } catch (err) {
      if (!(err instanceof ChainTxError) && !(err instanceof RelayTimeoutError)) throw err;
      this.logger.warn({ paymentId: p.id, error: err.message }, 'cancelAuthorization failed');
    }
    await this.tx(() => this.repo.touch(p.id));
  }

  /**
   * The one reading of a payment's terms (issue 31: REST/MCP payments, the A2A pay skill and x402
   * challenges all call it): `amount` as USDC decimal text → base units, and the payee `to` (an
   * organisation handle or agent slug) with its payout address.
   * @throws AppError 400 invalid_request: `amount` malformed or above MAX_AMOUNT; unknown payee
   *   (`unknown_payee`) or one without a payout address (`no_payout_address`), both on param `to`.
   */
  async payTerms(to: string, amount: string): Promise<{ units: bigint; payee: PayeeTarget & { address: string } }> {
    const units = this.parse(amount);
    return { units, payee: await this.resolvePayee(to) };
  }

  /** USDC decimal text → base units. @throws AppError 400 invalid_request (param `amount`). */
  parse(text: string): bigint {
    try {
      return parseAmount(text, this.config.maxAmountUnits);
    } catch (err) {
      if (err instanceof AmountFormatError) throw AppError.invalidParam('amount', err.message);
      throw err;
    }
  }

  /** @throws AppError 400 for an unknown payee or one without an address. */
  private async resolvePayee(handle: string): Promise<PayeeTarget & { address: string }> {
    const payee = await this.agents.resolveHandle(handle.trim());
    if (!payee) throw AppError.invalidParam('to', 'is not a known organisation handle or agent slug', { reason: 'unknown_payee' });
    if (!payee.address) {
      throw new AppError('invalid_request', `${handle} has no payout address`, { reason: 'no_payout_address', fields: [{ param: 'to', message: 'has no payout address' }] });
    }
    return payee as PayeeTarget & { address: string };
  }

  /** The agent-level refusals in docs/architecture.md §13 order (before the organisation gate and policy). */
  checkAgent(agent: AgentRow): void {
    if (!this.config.env.AGENTS_ENABLED) throw new AppError('agents_disabled', 'Agent spending is switched off on this service (AGENTS_ENABLED=false)');
    if (agent.paused) throw new AppError('agent_paused', 'This agent is paused by its owner', { agentId: agent.id });
    if (!agent.signerEnabled || !agent.signerAddress) throw new AppError('signer_required', "Enable the agent's session signer first", { agentId: agent.id });
  }

  /**
   * The organisation gate of the refusal order (docs/architecture.md §12, §13): a rejected
   * organisation's agents may not spend.
   * @throws AppError 403 kyb_rejected.
   */
  private organizationGate(organizationId: string): Promise<void> {
    return this.verification.assertNotRejected(organizationId);
  }

  toDto(p: Payment): PaymentDto {
    return {
      id: p.id,
      status: p.status,
      to: p.toHandle,
      toAddress: p.toAddress,
      amount: formatAmount(p.amount),
      fee: formatAmount(p.fee),
      txHash: p.txHash,
      mode: p.mode,
      mandateId: p.mandateId,
      taskId: p.taskId,
      failureReason: p.failureReason,
      refundedAmount: formatAmount(p.refundedUnits ?? 0n),
      createdAt: p.createdAt.toISOString(),
      updatedAt: p.updatedAt.toISOString(),
    };
  }

  /** Adds `delta` base units to the payment's refunded amount, in the caller's transaction (the refunds module, DESIGN §21). */
  addRefunded(id: string, delta: bigint): Promise<void> {
    return this.repo.addRefunded(id, delta);
  }

  /** The payment's refunded amount in base units (succeeded refunds; 0 for an unknown id). */
  refundedUnits(id: string): Promise<bigint> {
    return this.repo.refundedUnits(id);
  }
}

/** `work` with its answer rendered by `render` (the payment as a route or tool shows it). */
export function mapOwned<Row, Out>(work: RowOwnedWork<Row>, render: (row: Row) => Out | Promise<Out>): RowOwnedWork<Row> {
  return { ...work, resume: async (row) => render((await work.resume(row)) as Row) };
}
