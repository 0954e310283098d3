import { randomUUID } from 'node:crypto';
import type { ErrorCode } from '../../common/errors/app-error';
import type { PaymentDto } from '../../modules/payments/dto/payment.dto';
import { X402_EXTENSION_URI, X402_META } from './a2a-card.service';

/** A2A v1.0 task states in their JSON form (`TaskState` of @a2a-js/sdk, `taskStateToJSON`). */
export type TaskStateJson =
  | 'TASK_STATE_SUBMITTED'
  | 'TASK_STATE_WORKING'
  | 'TASK_STATE_INPUT_REQUIRED'
  | 'TASK_STATE_COMPLETED'
  | 'TASK_STATE_FAILED'
  | 'TASK_STATE_CANCELED'
  | 'TASK_STATE_REJECTED';

/** Terminal states: a task in one never changes again (A2A spec, task lifecycle). */
export const TERMINAL_STATES: ReadonlySet<string> = new Set(['TASK_STATE_COMPLETED', 'TASK_STATE_FAILED', 'TASK_STATE_CANCELED', 'TASK_STATE_REJECTED']);

/** The v1.0 JSON of a task status: state, an agent message carrying `data` and `metadata`, and the time. */
export interface TaskStatusJson {
  state: TaskStateJson;
  message: Record<string, unknown>;
  timestamp: string;
}

/** What the task metadata remembers of a pay request (`metadata.pay`): payee handle and decimal amount. */
export interface PayTerms {
  to: string;
  amount: string;
}

/** An agent message (A2A v1.0 JSON) on `taskId` with one data part and the given metadata. */
export function agentMessage(taskId: string, contextId: string, data: Record<string, unknown>, metadata: Record<string, unknown>, text?: string): Record<string, unknown> {
  const parts: Array<Record<string, unknown>> = [];
  if (text) parts.push({ text, mediaType: 'text/plain' });
  parts.push({ data, mediaType: 'application/json' });
  return { messageId: randomUUID(), taskId, contextId, role: 'ROLE_AGENT', parts, metadata, extensions: [X402_EXTENSION_URI] };
}

/** A status (v1.0 JSON) whose message carries `data` and `metadata`. */
export function status(state: TaskStateJson, taskId: string, contextId: string, data: Record<string, unknown>, metadata: Record<string, unknown>, text?: string): TaskStatusJson {
  return { state, message: agentMessage(taskId, contextId, data, metadata, text), timestamp: new Date().toISOString() };
}

/**
 * The x402 v2 `PaymentRequired` our pay skill announces (a2a-x402 `x402.payment.required`): one
 * `exact` requirement on `eip155:<chainId>` for `amountUnits` base units of USDC to `payTo`, with the
 * token's EIP-712 `extra {name, version}`. Informative: our agent's session signer pays, the client
 * sends no payload (docs/decisions.md "A2A").
 */
export function paymentRequired(input: { chainId: number; asset: string; payTo: string; amountUnits: bigint; eip712: { name: string; version: string }; maxTimeoutSeconds: number; resource: string }) {
  return {
    x402Version: 2,
    resource: { url: input.resource, description: 'A2A pay skill', mimeType: 'application/json' },
    accepts: [
      {
        scheme: 'exact',
        network: `eip155:${input.chainId}`,
        amount: input.amountUnits.toString(),
        asset: input.asset,
        payTo: input.payTo,
        maxTimeoutSeconds: input.maxTimeoutSeconds,
        extra: { name: input.eip712.name, version: input.eip712.version },
      },
    ],
  };
}

/**
 * The status a task shows for its payment (a2a-x402 states): pending/submitted → working +
 * `payment-submitted`; succeeded → completed + `payment-completed` with the receipt; failed →
 * failed + `payment-failed` with `x402.payment.error`. The payment rides in the message's data part.
 */
export function paymentStatus(taskId: string, contextId: string, payment: PaymentDto, chainId: number, payer: string): TaskStatusJson {
  const data = { payment };
  if (payment.status === 'succeeded') {
    const receipt = { success: true, transaction: payment.txHash, network: `eip155:${chainId}`, payer, amount: payment.amount };
    return status('TASK_STATE_COMPLETED', taskId, contextId, data, { [X402_META.status]: 'payment-completed', [X402_META.receipts]: [receipt] }, `Paid ${payment.amount} USDC to ${payment.to}.`);
  }
  if (payment.status === 'failed') {
    const code = payment.failureReason === 'expired' ? 'EXPIRED_PAYMENT' : 'SETTLEMENT_FAILED';
    const receipt = { success: false, errorReason: payment.failureReason, transaction: '', network: `eip155:${chainId}`, payer };
    return status('TASK_STATE_FAILED', taskId, contextId, data, { [X402_META.status]: 'payment-failed', [X402_META.error]: code, [X402_META.receipts]: [receipt] }, `Payment failed (${payment.failureReason}).`);
  }
  return status('TASK_STATE_WORKING', taskId, contextId, data, { [X402_META.status]: 'payment-submitted', paymentId: payment.id }, `Payment ${payment.id} is ${payment.status}; the task completes when it settles on chain.`);
}

/** Our error body as an A2A failure (a2a-x402 `payment-failed`; `x402.payment.error` mapped where the extension names one). */
export function errorStatus(taskId: string, contextId: string, err: { code: ErrorCode; message: string; details?: Record<string, unknown> }, x402 = true): TaskStatusJson {
  const error = { error: err.message, code: err.code, ...(err.details ? { details: err.details } : {}) };
  const rule = err.details?.rule;
  const x402Code =
    rule === 'insufficient_balance' ? 'INSUFFICIENT_FUNDS' : err.code === 'invalid_request' && (err.details?.fields as Array<{ param: string }> | undefined)?.[0]?.param === 'amount' ? 'INVALID_AMOUNT' : err.code;
  const metadata = x402 ? { [X402_META.status]: 'payment-failed', [X402_META.error]: x402Code, error } : { error };
  return status('TASK_STATE_FAILED', taskId, contextId, { error }, metadata, err.message);
}
