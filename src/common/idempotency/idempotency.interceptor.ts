import { CallHandler, ExecutionContext, Injectable, NestInterceptor } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request, Response } from 'express';
import { from, lastValueFrom, Observable } from 'rxjs';
import { AppConfig } from '../../config/app-config';
import { Propagation, TransactionHost } from '../../database/transaction';
import type { Principal } from '../auth/principal';
import { AppError } from '../errors/app-error';
import { canonicalJson, sha256Hex } from './fingerprint';
import { IdempotencyRepository } from './idempotency.repository';
import { IDEMPOTENT, IdempotentOptions } from './idempotent.decorator';

const KEY_PATTERN = /^[\x21-\x7e]{1,128}$/;
const REPLAYED = 'Idempotent-Replayed';

interface StoredError {
  error: string;
  code: AppError['code'];
  details?: Record<string, unknown>;
}

interface RecordContext {
  key: string;
  scopeHash: string;
  fingerprint: string;
  organizationId: string;
  method: string;
  path: string;
}

/** Carries a storable refusal out of the business transaction, so its writes roll back before the refusal is recorded. */
class StorableRefusal extends Error {
  constructor(readonly error: AppError) {
    super(error.message);
  }
}

/**
 * Business outcomes worth replaying (DESIGN §5): 2xx and final business refusals. Validation
 * 400s, 401, missing_scope, 429, 5xx, idempotency 409s and an unmined transaction's 409 run again.
 */
export function isStorableError(err: unknown): err is AppError {
  if (!(err instanceof AppError)) return false;
  if (err.status >= 500 || err.status === 400 || err.status === 401 || err.status === 429) return false;
  if (err.code === 'missing_scope' || err.code === 'idempotency_conflict' || err.code === 'rate_limited') return false;
  const reason = err.details?.reason;
  return !(err.status === 409 && reason === 'pending');
}

/**
 * Validates an Idempotency-Key header / body pair (DESIGN §5).
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
 * Idempotency as an opt-in interceptor backed by Postgres (STYLE §8, DESIGN §5). The record is
 * written in the same transaction as the business change: the handler runs inside the
 * transaction this interceptor opens (one statement takes the key's advisory lock and reads its
 * record). A storable business refusal rolls that transaction back and is recorded in a short
 * one of its own; a twin that slips in between finds no effect to repeat and records nothing new.
 */
@Injectable()
export class IdempotencyInterceptor implements NestInterceptor {
  constructor(
    private readonly reflector: Reflector,
    private readonly txHost: TransactionHost,
    private readonly records: IdempotencyRepository,
    private readonly config: AppConfig,
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
      return next.handle();
    }
    const principal = req.principal;
    const path = `${req.baseUrl}${(req.route as { path?: string } | undefined)?.path ?? req.path}`;
    const scopeHash = sha256Hex([principal.organizationId, principal.actor, req.method, path].join('|'));
    const { idempotencyKey: _omit, ...rest } = (body && typeof body === 'object' ? body : {}) as Record<string, unknown>;
    const fingerprint = sha256Hex(canonicalJson({ body: rest, params: req.params }));
    return from(this.run(next, res, { key, scopeHash, fingerprint, organizationId: principal.organizationId, method: req.method, path }));
  }

  private async run(next: CallHandler, res: Response, r: RecordContext): Promise<unknown> {
    const ttl = this.config.env.IDEMPOTENCY_TTL_HOURS;
    const outcome = await this.txHost
      .withTransaction(Propagation.RequiresNew, async () => {
        const { locked, record } = await this.records.lockAndFind(r.scopeHash, r.key);
        if (!locked) {
          throw new AppError('idempotency_conflict', 'A request with this Idempotency-Key is still in progress', { reason: 'in_progress' }, 409, {
            'Retry-After': '1',
          });
        }
        if (record) {
          if (record.fingerprint !== r.fingerprint) {
            throw new AppError('idempotency_conflict', 'This Idempotency-Key was already used with a different request', { reason: 'payload_mismatch' }, 422);
          }
          return { replayed: true, status: record.responseStatus, body: record.responseBody };
        }
        try {
          const body = await lastValueFrom<unknown, undefined>(next.handle(), { defaultValue: undefined });
          await this.records.insert({ ...this.recordBase(r), responseStatus: 200, responseBody: body ?? null }, ttl);
          return { replayed: false, status: 200, body };
        } catch (err) {
          throw isStorableError(err) ? new StorableRefusal(err) : err;
        }
      })
      .catch(async (err: unknown) => {
        if (!(err instanceof StorableRefusal)) throw err;
        const e = err.error;
        const stored: StoredError = { error: e.message, code: e.code, ...(e.details ? { details: e.details } : {}) };
        await this.txHost.withTransaction(Propagation.RequiresNew, () =>
          this.records.insert({ ...this.recordBase(r), responseStatus: e.status, responseBody: stored }, ttl),
        );
        return { replayed: false, status: e.status, body: stored as unknown };
      });
    res.setHeader(REPLAYED, String(outcome.replayed));
    if (outcome.status >= 400) {
      const stored = outcome.body as StoredError;
      throw new AppError(stored.code, stored.error, stored.details, outcome.status);
    }
    res.status(outcome.status);
    return outcome.body;
  }

  private recordBase(r: RecordContext) {
    return { scopeHash: r.scopeHash, idempotencyKey: r.key, fingerprint: r.fingerprint, organizationId: r.organizationId, method: r.method, path: r.path };
  }
}
