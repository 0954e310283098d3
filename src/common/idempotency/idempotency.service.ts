import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../config/app-config';
import { Propagation, type RawConnection, TransactionHost, TxHost } from '../../database/transaction';
import { AppError } from '../errors/app-error';
import { sha256Hex } from './fingerprint';
import { IdempotencyRepository, StoredOutcome } from './idempotency.repository';

/** One idempotent call as any transport sees it (HTTP, MCP tool, A2A handler). */
export interface IdempotentRequest {
  organizationId: string;
  /**
   * What else scopes the key within the organisation, in order: the principal (merchant, agent
   * or OAuth client), then the operation (HTTP: method and route template).
   */
  scope: readonly string[];
  /** The client's key, already validated ({@link resolveIdempotencyKey}). */
  key: string;
  /** SHA-256 hex of the canonical request (body and path parameters). */
  fingerprint: string;
  /** Stored with the record for operators; not part of the lookup beyond `scope`. */
  method: string;
  path: string;
}

/**
 * The work behind an idempotent call. `prepare` (optional) does the network checks (chain RPC,
 * DNS): it runs with no transaction and no pooled connection held, must have no side effects
 * (twins may both run it), and its result is handed to `run`. `run` executes inside the
 * transaction that holds the key's lock and writes the record, so it re-checks under row locks
 * whatever `prepare` observed.
 */
export interface IdempotentWork<P, T> {
  prepare?: () => Promise<P>;
  run: (prepared: P) => Promise<T>;
}

/** The outcome to answer with: a 2xx body, or a stored refusal (`body` then is a {@link StoredError}). */
export interface IdempotentOutcome {
  replayed: boolean;
  status: number;
  body: unknown;
}

/** A refusal as stored and replayed: message, code and details (the request id is always fresh). */
export interface StoredError {
  error: string;
  code: AppError['code'];
  details?: Record<string, unknown>;
}

/**
 * Business outcomes worth replaying (docs/architecture.md §5): 2xx and final business refusals
 * (403 such as forbidden or policy_denied, 409 state conflicts). Validation 400s, 401, 404
 * (the resource may become visible once indexed), missing_scope, 429, 5xx, idempotency
 * conflicts and an unmined transaction's 409 are not stored: a retry runs again.
 */
export function isStorableError(err: unknown): err is AppError {
  if (!(err instanceof AppError)) return false;
  if (err.status >= 500 || err.status === 400 || err.status === 401 || err.status === 404 || err.status === 429) return false;
  if (err.code === 'missing_scope' || err.code === 'idempotency_conflict' || err.code === 'rate_limited') return false;
  const reason = err.details?.reason;
  return !(err.status === 409 && reason === 'pending');
}

/** The AppError to answer a refused outcome with, or null for a 2xx outcome. */
export function outcomeError(outcome: IdempotentOutcome): AppError | null {
  if (outcome.status < 400) return null;
  const stored = outcome.body as StoredError;
  return new AppError(stored.code, stored.error, stored.details, outcome.status);
}

/** The savepoint the handler runs under (rolled back to when it refuses; released by COMMIT). */
const HANDLER_SAVEPOINT = 'idempotent_handler';

/**
 * Idempotency as a domain service (docs/architecture.md §5), used by every transport: the first
 * call under a key executes once and its outcome is recorded in the same transaction as its
 * effect; a finished twin replays it, a different request under the key gets 422, a twin in
 * flight gets 409 with Retry-After: 1.
 *
 * Order: [if `prepare`: read the record without a lock (replay if finished) → prepare, no
 * connection held] → BEGIN, advisory lock, read the record (next statement, so its snapshot is
 * after the lock) and savepoint, in one round trip → `run` → record → COMMIT. A storable refusal
 * rolls back to the savepoint and is recorded under the same lock, so no twin can slip between
 * the refusal and its record.
 */
@Injectable()
export class IdempotencyService {
  constructor(
    private readonly txHost: TransactionHost,
    private readonly records: IdempotencyRepository,
    private readonly config: AppConfig,
  ) {}

  /**
   * Executes `work` at most once per (organisation, scope, key).
   * @returns the outcome, first or replayed; a refusal comes back as an outcome (status ≥ 400), see {@link outcomeError}.
   * @throws AppError idempotency_conflict 409 (in flight, Retry-After: 1) or 422 (payload_mismatch);
   *   any error of `work` that is not storable ({@link isStorableError}), unrecorded.
   */
  async execute<P, T>(request: IdempotentRequest, work: IdempotentWork<P, T>): Promise<IdempotentOutcome> {
    const scopeHash = sha256Hex([request.organizationId, ...request.scope].join('|'));
    let prepared: P | undefined;
    if (work.prepare) {
      const finished = await this.records.find(scopeHash, request.key);
      if (finished) return this.replay(finished, request.fingerprint);
      try {
        prepared = await work.prepare();
      } catch (err) {
        if (!isStorableError(err)) throw err;
        return this.locked(request, scopeHash, () => Promise.reject(err));
      }
    }
    return this.locked(request, scopeHash, () => work.run(prepared as P));
  }

  private locked(request: IdempotentRequest, scopeHash: string, run: () => Promise<unknown>): Promise<IdempotentOutcome> {
    const txHost = this.txHost as TxHost;
    const ttl = this.config.env.IDEMPOTENCY_TTL_HOURS;
    const base = {
      scopeHash,
      idempotencyKey: request.key,
      fingerprint: request.fingerprint,
      organizationId: request.organizationId,
      method: request.method,
      path: request.path,
    };
    let claim: { locked: boolean; record: StoredOutcome | null } | undefined;
    // BEGIN, the lock, the record read and the handler's savepoint travel in one round trip; the
    // savepoint is never released: COMMIT releases it.
    const begin = async (connection: RawConnection) => {
      claim = await this.records.beginAndClaim(connection, scopeHash, request.key, HANDLER_SAVEPOINT);
    };
    return txHost.withTransaction(Propagation.RequiresNew, { begin }, async () => {
      const { locked, record } = claim!;
      if (!locked) {
        throw new AppError('idempotency_conflict', 'A request with this Idempotency-Key is still in progress', { reason: 'in_progress' }, 409, {
          'Retry-After': '1',
        });
      }
      if (record) return this.replay(record, request.fingerprint);
      let outcome: IdempotentOutcome;
      try {
        const body = await run();
        outcome = { replayed: false, status: 200, body };
      } catch (err) {
        if (!isStorableError(err)) throw err;
        await txHost.tx.query(`ROLLBACK TO SAVEPOINT ${HANDLER_SAVEPOINT}`);
        const stored: StoredError = { error: err.message, code: err.code, ...(err.details ? { details: err.details } : {}) };
        outcome = { replayed: false, status: err.status, body: stored };
      }
      await this.records.insert({ ...base, responseStatus: outcome.status, responseBody: outcome.body }, ttl);
      return outcome;
    });
  }

  private replay(record: StoredOutcome, fingerprint: string): IdempotentOutcome {
    if (record.fingerprint !== fingerprint) {
      throw new AppError('idempotency_conflict', 'This Idempotency-Key was already used with a different request', { reason: 'payload_mismatch' }, 422);
    }
    return { replayed: true, status: record.responseStatus, body: record.responseBody };
  }
}
