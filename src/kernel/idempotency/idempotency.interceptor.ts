import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request, Response } from 'express';
import { from, lastValueFrom, mergeMap, Observable } from 'rxjs';
import type { Principal } from '../auth/principal';
import { AppError } from '../../common/errors/app-error';
import { canonicalJson, sha256Hex } from './fingerprint';
import { AnyIdempotentWork, IdempotencyService, IdempotentRequest, isRowOwned, isStorableError, outcomeError } from './idempotency.service';
import { IDEMPOTENT, IdempotentOptions, IdempotentSteps, operationScope, runUnkeyed } from './idempotent-work';

const KEY_PATTERN = /^[\x21-\x7e]{1,128}$/;
const REPLAYED = 'Idempotent-Replayed';

/**
 * Validates an Idempotency-Key header / body pair (docs/architecture.md §5).
 * @returns the key, or undefined when neither is present.
 * @throws AppError invalid_request for a malformed key or a header/body mismatch.
 */
export function resolveIdempotencyKey(header: string | undefined, bodyKey: unknown): string | undefined {
  if (header !== undefined && !KEY_PATTERN.test(header)) {
    throw AppError.invalidParam('Idempotency-Key', 'must be 1–128 printable ASCII characters');
  }
  if (bodyKey !== undefined && (typeof bodyKey !== 'string' || !KEY_PATTERN.test(bodyKey))) {
    throw AppError.invalidParam('idempotencyKey', 'must be 1–128 printable ASCII characters');
  }
  if (header !== undefined && bodyKey !== undefined && header !== bodyKey) {
    throw AppError.invalidParam('idempotencyKey', 'differs from the Idempotency-Key header');
  }
  return header ?? (bodyKey as string | undefined);
}

/**
 * The HTTP adapter of {@link IdempotencyService} for routes that run a declared operation with a
 * key (`@Runs`, DESIGN §17; docs/architecture.md §5): validates the key, scopes it to the
 * organisation + actor + the operation's name (the scope MCP and A2A use too, {@link operationScope}),
 * fingerprints body and path parameters, and answers the outcome with `Idempotent-Replayed`. The
 * handler (validation pipe, then the controller) only returns the operation's work, whose network
 * steps then run before any transaction opens. There are no route-scoped keys (issue 31).
 */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor {
  constructor(
    private readonly reflector: Reflector,
    private readonly idempotency: IdempotencyService,
  ) {}

  intercept(ctx: ExecutionContext, next: CallHandler): Observable<unknown> {
    const options = this.reflector.get<IdempotentOptions | undefined>(IDEMPOTENT, ctx.getHandler());
    if (!options) return next.handle();
    const req = ctx.switchToHttp().getRequest<Request & { principal: Principal }>();
    const res = ctx.switchToHttp().getResponse<Response>();
    const body: unknown = req.body;
    const bodyKey = body && typeof body === 'object' ? (body as Record<string, unknown>).idempotencyKey : undefined;
    const key = resolveIdempotencyKey(req.header('idempotency-key'), bodyKey);
    if (!key) {
      if (options.required) throw new AppError('idempotency_required', 'This operation requires an Idempotency-Key header');
      return next.handle().pipe(mergeMap((steps) => from(runUnkeyed(asWork(steps)))));
    }
    const principal = req.principal;
    const path = `${req.baseUrl}${(req.route as { path?: string } | undefined)?.path ?? req.path}`;
    const { idempotencyKey: _omit, ...rest } = (body && typeof body === 'object' ? body : {}) as Record<string, unknown>;
    const request: IdempotentRequest = {
      organizationId: principal.organizationId,
      scope: operationScope(principal, options.operation),
      key,
      fingerprint: sha256Hex(canonicalJson({ body: rest, params: req.params })),
      method: req.method,
      path,
    };
    return from(this.run(request, next, res));
  }

  private async run(request: IdempotentRequest, next: CallHandler, res: Response): Promise<unknown> {
    const outcome = await this.idempotency.execute(request, await this.stepsOf(next));
    res.setHeader(REPLAYED, String(outcome.replayed));
    const refusal = outcomeError(outcome);
    if (refusal) throw refusal;
    res.status(outcome.status);
    return outcome.body;
  }

  /** Runs the handler (validation pipe, then the controller returning its work); a storable refusal it throws becomes the outcome. */
  private async stepsOf(next: CallHandler): Promise<AnyIdempotentWork> {
    try {
      return asWork(await lastValueFrom(next.handle()));
    } catch (err) {
      if (!isStorableError(err)) throw err;
      return { prepare: () => Promise.reject(err), run: () => Promise.reject(err) };
    }
  }
}

function asWork(value: unknown): AnyIdempotentWork {
  if (value instanceof IdempotentSteps) return value as IdempotentSteps<unknown, unknown>;
  if (value && typeof value === 'object' && (isRowOwned(value) || typeof (value as { run?: unknown }).run === 'function')) return value as AnyIdempotentWork;
  throw new Error('a route declared with @Runs and a key must return its operation\'s work (IdempotentSteps, {prepare?, run, after?} or a row-owned work)');
}
