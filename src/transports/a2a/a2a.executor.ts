import { Injectable, Logger } from '@nestjs/common';
import { Message, Task } from '@a2a-js/sdk';
import { AgentEvent, type AgentExecutor, type ExecutionEventBus, type RequestContext } from '@a2a-js/sdk/server';
import type { Principal } from '../../kernel/auth/principal';
import { AppError } from '../../common/errors/app-error';
import { authorize } from '../../kernel/access';
import { Runner } from '../../kernel/runner';
import { validateInput } from '../../kernel/validate';
import type { CheckoutService } from '../../modules/checkout/checkout.service';
import type { PaymentDto } from '../../modules/payments/dto/payment.dto';
import { X402_EXTENSION_URI, X402_META } from './a2a-card.service';
import { A2aPaymentsService } from './a2a-payments.service';
import { A2aOperations } from './a2a.operations';
import { agentMessage, errorStatus, PayTerms, status, TaskStatusJson } from './a2a-task-status';
import { principalOf } from './a2a-tasks.service';

/** What a message asks for, read from its first data part and metadata. */
interface Intent {
  skill: 'pay' | 'create-checkout' | null;
  data: Record<string, unknown>;
  x402Status: string | undefined;
}

/**
 * The agent behind `POST /api/v1/a2a` (docs/architecture.md §14; what it does and does not do:
 * docs/decisions.md "A2A executor"). Two skills:
 * - `pay`: a data part `{to, amount}` → a task `input-required` with `x402.payment.status:
 *   payment-required` and the x402 requirements; a follow-up message on that task with
 *   `x402.payment.status: payment-submitted` (or the first message already carrying it) pays through
 *   the kernel's runner (operation `submit-a2a-payment`) as a Payment `mode: "a2a"` with the task
 *   id, UNIQUE per agent (the task is the call's identity, so a retried submit pays once) → `working` + `payment-submitted`, `completed` + `payment-completed`
 *   once settled (read back by GetTask), or `failed` + `payment-failed` with our error body in
 *   `metadata.error`; `payment-rejected` cancels the task.
 * - `create-checkout`: a data part with the body of POST /checkout-sessions and `skill:
 *   "create-checkout"` → operation `create-checkout` (checkout:write, the REST DTO, through the runner)
 *   → a completed task with the session as an artifact; a refusal (an agent key: 403 missing_scope,
 *   as on REST) fails the task with our error body in `error`.
 * Anything else gets a message explaining the two forms. No streaming, no push notifications.
 */
@Injectable()
export class A2aExecutor implements AgentExecutor {
  private readonly logger = new Logger('A2aExecutor');

  constructor(
    private readonly payments: A2aPaymentsService,
    private readonly ops: A2aOperations,
    private readonly runner: Runner,
  ) {}

  async execute(ctx: RequestContext, bus: ExecutionEventBus): Promise<void> {
    try {
      const principal = principalOf(ctx.context);
      const intent = readIntent(ctx.userMessage, ctx.task);
      if (intent.skill === 'pay') await this.pay(principal, ctx, intent, bus);
      else if (intent.skill === 'create-checkout') await this.createCheckout(principal, ctx, intent, bus);
      else bus.publish(AgentEvent.message(Message.fromJSON(agentMessage(ctx.task?.id ?? '', ctx.contextId, { skills: ['pay', 'create-checkout'] }, {}, USAGE))));
    } finally {
      bus.finished();
    }
  }

  /** Cancels a task still waiting for payment (a task with a payment refuses in the store). */
  cancelTask(taskId: string, bus: ExecutionEventBus): Promise<void> {
    bus.publish(AgentEvent.statusUpdate({ taskId, contextId: '', status: { state: 5, message: undefined, timestamp: new Date().toISOString() }, metadata: undefined }));
    bus.finished();
    return Promise.resolve();
  }

  private async pay(principal: Principal, ctx: RequestContext, intent: Intent, bus: ExecutionEventBus): Promise<void> {
    if (ctx.context.requestedExtensions?.includes(X402_EXTENSION_URI)) ctx.context.addActivatedExtension(X402_EXTENSION_URI);
    const publish = (s: TaskStatusJson, metadata: Record<string, unknown>) => bus.publish(AgentEvent.task(taskOf(ctx, s, metadata)));
    const asked = (ctx.task?.metadata as { pay?: PayTerms } | undefined)?.pay;
    try {
      authorize(principal, this.ops.pay);
      let terms: PayTerms;
      if (asked) terms = asked;
      else {
        // The skill's declared input, validated by the kernel as the runner (and REST) validate it: the same field messages.
        const { to, amount } = await validateInput(this.ops.pay.input!, { to: intent.data.to, amount: intent.data.amount });
        const { required, terms: checked } = await this.payments.requirements({ to, amount });
        terms = checked;
        if (intent.x402Status !== 'payment-submitted') {
          const s = status('TASK_STATE_INPUT_REQUIRED', ctx.taskId, ctx.contextId, { pay: terms }, { [X402_META.status]: 'payment-required', [X402_META.required]: required }, `Payment required: ${terms.amount} USDC to ${terms.to}. Reply on this task with metadata {"${X402_META.status}": "payment-submitted"} to pay.`);
          publish(s, { skill: 'pay', pay: terms });
          return;
        }
      }
      if (intent.x402Status === 'payment-rejected') {
        publish(status('TASK_STATE_CANCELED', ctx.taskId, ctx.contextId, { pay: terms }, { [X402_META.status]: 'payment-rejected' }, 'Payment rejected by the client.'), { skill: 'pay', pay: terms });
        return;
      }
      if (intent.x402Status !== 'payment-submitted') {
        publish(status('TASK_STATE_INPUT_REQUIRED', ctx.taskId, ctx.contextId, { pay: terms }, { [X402_META.status]: 'payment-required' }, `Still waiting for payment-submitted.`), { skill: 'pay', pay: terms });
        return;
      }
      const { body } = await this.runner.invoke(this.ops.pay, principal, { ...terms, taskId: ctx.taskId }, ctx.taskId);
      const payment = body as PaymentDto;
      publish(await this.payments.statusFor(principal, ctx.taskId, ctx.contextId, payment), { skill: 'pay', pay: terms, paymentId: payment.id });
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      publish(errorStatus(ctx.taskId, ctx.contextId, err), { skill: 'pay', ...(asked ? { pay: asked } : {}) });
    }
  }

  private async createCheckout(principal: Principal, ctx: RequestContext, intent: Intent, bus: ExecutionEventBus): Promise<void> {
    const fail = (err: AppError) => bus.publish(AgentEvent.task(taskOf(ctx, errorStatus(ctx.taskId, ctx.contextId, err, false), { skill: 'create-checkout' })));
    const { skill: _skill, ...body } = intent.data;
    try {
      const { body: created } = await this.runner.invoke(this.ops.createCheckout, principal, body, undefined);
      const session = created as Awaited<ReturnType<CheckoutService['create']>>;
      const s = status('TASK_STATE_COMPLETED', ctx.taskId, ctx.contextId, { checkoutSession: session }, {}, `Checkout ${session.id} created: ${session.payUrl}`);
      const task = taskOf(ctx, s, { skill: 'create-checkout', checkoutSessionId: session.id });
      task.artifacts = [
        Task.fromJSON({ artifacts: [{ artifactId: `checkout-${session.id}`, name: 'checkout-session', parts: [{ data: session, mediaType: 'application/json' }] }] }).artifacts[0],
      ];
      bus.publish(AgentEvent.task(task));
    } catch (err) {
      if (!(err instanceof AppError)) throw err;
      this.logger.debug({ code: err.code }, 'create-checkout refused');
      fail(err);
    }
  }
}

const USAGE =
  'Send a data part {"to": "<handle or agent slug>", "amount": "5.00"} to pay (needs an agent key), or {"skill": "create-checkout", "amount": "25.00", "description": "…"} to create a checkout (needs a merchant credential).';

/** The whole task (the SDK wants a task event first, also on follow-ups) with `s` as its status. */
function taskOf(ctx: RequestContext, s: TaskStatusJson, metadata: Record<string, unknown>): Task {
  return Task.fromJSON({ id: ctx.taskId, contextId: ctx.contextId, status: s, metadata: { ...((ctx.task?.metadata as Record<string, unknown> | undefined) ?? {}), ...metadata } });
}

/** The skill asked for: metadata `skill`, data `skill`, a task's earlier skill, or a data part with `to` and `amount` (pay). */
function readIntent(message: Message, task: Task | undefined): Intent {
  const json = Message.toJSON(message) as { parts?: Array<{ data?: unknown }>; metadata?: Record<string, unknown> };
  const part = json.parts?.find((p) => p.data !== undefined && p.data !== null && typeof p.data === 'object' && !Array.isArray(p.data));
  const data = (part?.data ?? {}) as Record<string, unknown>;
  const meta = json.metadata ?? {};
  const named = meta.skill ?? data.skill ?? (task?.metadata as { skill?: unknown } | undefined)?.skill;
  const skill = named === 'pay' || named === 'create-checkout' ? named : typeof data.to === 'string' && typeof data.amount === 'string' ? 'pay' : null;
  const x402Status = typeof meta[X402_META.status] === 'string' ? (meta[X402_META.status] as string) : undefined;
  return { skill, data, x402Status };
}
