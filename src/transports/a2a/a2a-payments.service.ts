import { Injectable } from '@nestjs/common';
import { formatAmount } from '@lib/money';
import type { Principal } from '../../kernel/auth/principal';
import { AppError } from '../../common/errors/app-error';
import { AppConfig } from '../../config/app-config';
import { AgentSpendGate } from '../../modules/agents/agent-spend.service';
import type { PaymentDto } from '../../modules/payments/dto/payment.dto';
import type { RowOwnedWork } from '../../kernel/idempotency/idempotency.service';
import { mapOwned, PAYMENT_VALIDITY_SECONDS, PaymentsService } from '../../modules/payments/payments.service';
import { ChainAccess } from '../../chain/chain-access.service';
import { A2A_RPC_PATH } from './a2a-card.service';
import { paymentRequired, paymentStatus, PayTerms, TaskStatusJson, TERMINAL_STATES } from './a2a-task-status';
import { A2aTasksService } from './a2a-tasks.service';


/** Result of payment-submitted: the payment as REST renders it and the task (A2A v1.0 JSON), when a taskId was given. */
export interface PaymentSubmittedResult {
  payment: PaymentDto;
  task: Record<string, unknown> | null;
}

/**
 * A2A payments (docs/architecture.md §14): a Payment `mode: "a2a"` through PaymentsService.spendWork
 * (its refusal order, reservation under the agent row lock, recovery points and relayer), with the
 * A2A task id stored on the payment, UNIQUE per agent: one task, one payment.
 */
@Injectable()
export class A2aPaymentsService {
  constructor(
    private readonly payments: PaymentsService,
    private readonly tasks: A2aTasksService,
    private readonly gate: AgentSpendGate,
    private readonly chain: ChainAccess,
    private readonly config: AppConfig,
  ) {}

  /**
   * Pays `terms` as the agent of `principal` (operation `submit-a2a-payment`, row-owned: DESIGN §5,
   * §14), idempotent on `key` and on the task id: the payment of task `taskId` (UNIQUE per agent,
   * whatever key made it) is the one a retry owns; same terms → that payment, other terms → 422.
   * The JSON-RPC pay skill has no Idempotency-Key: the task alone is its identity. Answers the
   * payment after its first relay attempt (usually `submitted`).
   * @throws AppError 400 (invalid amount, no key and no task); as the work's outcome the refusals of
   *   PaymentsService.spendWork.
   */
  payWork(principal: Principal, terms: PayTerms, key: string | undefined, taskId: string | null): RowOwnedWork<unknown> {
    const work = this.payments.spendWork(principal, { to: terms.to, amount: terms.amount, mode: 'a2a' }, key, taskId ? { taskId } : {});
    return mapOwned(work, (p) => this.payments.toDto(p));
  }

  /**
   * POST /api/v1/a2a/payment-submitted as row-owned work: pays `params.to` `params.amount` and, with
   * a `taskId`, records the task (a2a-x402 state of the payment; Postgres, cached 24 h in Redis).
   * Before a first payment, a task the JSON-RPC endpoint created asking for other terms → 422
   * idempotency_conflict, a task that ended without a payment (failed, canceled) → 409
   * invalid_request (details.status).
   * @throws AppError as {@link payWork}.
   */
  submitWork(principal: Principal, params: { to: string; amount: string; taskId?: string }, key: string | undefined): RowOwnedWork<unknown> {
    const taskId = params.taskId ?? null;
    const work = this.payWork(principal, { to: params.to, amount: params.amount }, key, taskId);
    return {
      ...work,
      prepare: async () => {
        const existing = taskId ? await this.tasks.loadJson(principal, taskId) : null;
        const meta = existing?.metadata as { pay?: PayTerms; paymentId?: string } | undefined;
        const state = (existing?.status as { state?: string } | undefined)?.state ?? '';
        if (existing && TERMINAL_STATES.has(state) && !meta?.paymentId) {
          throw AppError.invalidState('task', state, ['TASK_STATE_INPUT_REQUIRED', 'TASK_STATE_WORKING']);
        }
        const asked = meta?.pay;
        if (asked && !sameTerms(asked, params, (text) => this.payments.parse(text))) {
          throw new AppError('idempotency_conflict', `Task ${taskId} asked for ${asked.amount} to ${asked.to}`, { reason: 'task_mismatch', taskId, expected: asked }, 422);
        }
        return work.prepare ? work.prepare() : undefined;
      },
      resume: async (row) => {
        const payment = (await work.resume(row)) as PaymentDto;
        if (!taskId) return { payment, task: null };
        const existing = await this.tasks.loadJson(principal, taskId);
        const contextId = typeof existing?.contextId === 'string' ? existing.contextId : taskId;
        const next = await this.statusFor(principal, taskId, contextId, payment);
        const task = {
          ...(existing ?? { artifacts: [], history: [] }),
          id: taskId,
          contextId,
          status: next,
          history: [...((existing?.history as unknown[] | undefined) ?? []), next.message],
          metadata: { ...((existing?.metadata as Record<string, unknown> | undefined) ?? {}), skill: 'pay', pay: { to: payment.to, amount: payment.amount }, paymentId: payment.id },
        };
        await this.tasks.saveJson(principal, task, next.state);
        return { payment, task } satisfies PaymentSubmittedResult;
      },
    };
  }

  /**
   * The x402 `PaymentRequired` for `terms` (the pay skill's payment-required step): validates the
   * amount and the payee first.
   * @throws AppError 400 invalid_request (amount; unknown payee or one without an address).
   */
  async requirements(terms: PayTerms): Promise<{ required: ReturnType<typeof paymentRequired>; terms: PayTerms }> {
    const { units, payee } = await this.payments.payTerms(terms.to, terms.amount);
    const domain = await this.chain.usdc.eip712Domain();
    const required = paymentRequired({
      chainId: this.chain.chainId,
      asset: this.chain.usdc.address,
      payTo: payee.address,
      amountUnits: units,
      eip712: { name: domain.name, version: domain.version },
      maxTimeoutSeconds: PAYMENT_VALIDITY_SECONDS,
      resource: `${this.config.env.API_BASE_URL.replace(/\/$/, '')}${A2A_RPC_PATH}`,
    });
    return { required, terms: { to: payee.handle, amount: formatAmount(units) } };
  }

  /** The a2a-x402 status of task `taskId` for `payment` (see {@link paymentStatus}). */
  async statusFor(principal: Principal, taskId: string, contextId: string, payment: PaymentDto): Promise<TaskStatusJson> {
    return paymentStatus(taskId, contextId, payment, this.chain.chainId, await this.payerOf(principal));
  }

  /** The paying signer's address (the x402 receipt's `payer`). */
  async payerOf(principal: Principal): Promise<string> {
    const agent = principal.agentId ? await this.gate.find(principal.agentId) : null;
    return agent?.signerAddress ?? '';
  }
}

/** Same payee (case-insensitive) and same amount in base units, each amount read by `parse` (PaymentsService.parse); an unreadable one is not the same. */
function sameTerms(a: PayTerms, b: PayTerms, parse: (text: string) => bigint): boolean {
  if (a.to.trim().toLowerCase() !== b.to.trim().toLowerCase()) return false;
  try {
    return parse(a.amount) === parse(b.amount);
  } catch {
    return false;
  }
}
