import { Injectable } from '@nestjs/common';
import type { Principal } from './auth/principal';
import { AppError } from '../common/errors/app-error';
import { canonicalJson, sha256Hex } from './idempotency/fingerprint';
import { resolveIdempotencyKey } from './idempotency/idempotency.interceptor';
import { IdempotencyService, outcomeError } from './idempotency/idempotency.service';
import { operationScope, runUnkeyed } from './idempotency/idempotent.decorator';
import { authorize } from './access';
import type { Operation } from './operation';
import { validateInput } from './validate';

/** The header (REST) and result flag (MCP, A2A) saying an answer is a replay (DESIGN §5). */
export const REPLAYED_HEADER = 'Idempotent-Replayed';

/** What {@link Runner.invoke} answers: the operation's result, and whether it is a replay. */
export interface Invocation {
  replayed: boolean;
  body: unknown;
}

/**
 * The capability kernel's runner (DESIGN §17) for the transports that are not Nest routes (MCP
 * tools, A2A skills): the same steps, in the same order, as the REST guard + interceptor + pipe.
 * Authentication ({@link Authenticator}) and the per-credential rate limit ({@link RateLimiter})
 * are taken once per transport request at its entry, as on REST; then per operation: access
 * (scope and credential kind) → the Idempotency-Key rule of its mode → validation of the declared
 * input → the one idempotency service (advisory lock, record, replay, 422 on another request, 409
 * in flight, stored refusals; the row for `row-owned`) → the work.
 */
@Injectable()
export class Runner {
  constructor(private readonly idempotency: IdempotencyService) {}

  /**
   * Runs `op` for `principal` on `input` under `key`. `params` are the call's path-like parameters
   * (e.g. `{id}`), fingerprinted apart from the body exactly as REST does, so the same call under
   * the same key replays the same on every transport.
   * @throws AppError 403 missing_scope / forbidden, 400 invalid_request (validation, a malformed
   *   key) or idempotency_required, 409/422 idempotency_conflict, and the operation's refusals
   *   (a recorded one replayed; its `Idempotent-Replayed` header set either way when a key was used).
   */
  async invoke<I>(op: Operation<I>, principal: Principal, input: unknown, key: string | undefined, params: Record<string, string> = {}): Promise<Invocation> {
    authorize(principal, op);
    // The key before the body, as on REST (its interceptor runs before the validation pipe).
    const checkedKey = resolveIdempotencyKey(key, undefined);
    if (!checkedKey && (op.idempotency === 'required' || op.idempotency === 'row-owned')) {
      throw new AppError('idempotency_required', `${op.name} requires an idempotency key`, { fields: [{ param: 'idempotencyKey', message: 'is required' }] });
    }
    const value = op.input ? await validateInput(op.input as never, input) : (input as I);
    const work = await op.work({ principal, key: checkedKey, params }, value as I);
    if (!checkedKey || op.idempotency === 'none') return { replayed: false, body: await runUnkeyed(work) };
    const outcome = await this.idempotency.execute(
      {
        organizationId: principal.organizationId,
        scope: operationScope(principal, op.name),
        key: checkedKey,
        fingerprint: sha256Hex(canonicalJson({ body: input ?? {}, params })),
        method: 'OP',
        path: op.name,
      },
      work,
    );
    const refusal = outcomeError(outcome);
    if (refusal) throw new AppError(refusal.code, refusal.message, refusal.details, refusal.status, { [REPLAYED_HEADER]: String(outcome.replayed) });
    return { replayed: outcome.replayed, body: outcome.body };
  }
}
