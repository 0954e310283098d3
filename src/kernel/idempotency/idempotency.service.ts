import { Injectable } from '@nestjs/common';
import { AppConfig } from '../../config/app-config';
import { BeginDeclined, Propagation, type RawConnection, TransactionHost, TxHost } from '../../database/transaction';
import { AppError } from '../../common/errors/app-error';
import { sha256Hex } from './fingerprint';
import { IdempotencyRepository, isRecordNotWritten, StoredOutcome } from './idempotency.repository';

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
  /**
   * A network step with side effects (a chain relay) that must run once per key and outside any
   * transaction (DESIGN §5): `run`'s transaction commits an in-flight claim instead of the outcome,
   * `after` runs with `run`'s result, and its result (or storable refusal) replaces the claim. A
   * twin meanwhile gets 409 in flight. A claim whose process died lapses after
   * {@link CLAIM_LEASE_SECONDS}, so a retry runs again.
   */
  after?: (ran: T) => Promise<unknown>;
}

/**
 * Work whose own row is the record (idempotency mode `row-owned`, DESIGN §5): the agent's payment
 * with UNIQUE(agent_id, idempotency_key). Success is never copied into a record: a retry finds the
 * row and resumes it from its last recovery point; refusals are recorded as for any key.
 */
export interface RowOwnedWork<Row> {
  /** The fingerprint stored on the row (the domain's canonical request); replaces the transport's. */
  readonly fingerprint: string;
  /** The row this call owns (by key, or by another unique handle such as the A2A task id), read with no transaction open; null when none. */
  owned(): Promise<{ row: Row; fingerprint: string } | null>;
  /** Network reads before the transaction (no side effects), as {@link IdempotentWork.prepare}. */
  prepare?: () => Promise<unknown>;
  /** In the key's locked transaction: inserts the row (a refusal thrown here is recorded) or returns a twin found under its own lock. */
  reserve(prepared: unknown): Promise<{ row: Row; fingerprint: string; created: boolean }>;
  /** With no transaction open: moves the row on from its last recovery point and renders the answer. */
  resume(row: Row): Promise<unknown>;
}

/** Any work the idempotency service runs. */
export type AnyIdempotentWork = IdempotentWork<unknown, unknown> | RowOwnedWork<unknown>;

/** Whether `work` is row-owned. */
export function isRowOwned(work: object): work is RowOwnedWork<unknown> {
  return typeof (work as RowOwnedWork<unknown>).reserve === 'function';
}

/** How long an in-flight claim ({@link IdempotentWork.after}) holds its key when its process dies (seconds). */
export const CLAIM_LEASE_SECONDS = 120;

/** The stored status of an in-flight claim (RFC 2518 102 Processing): never answered, only recognised. */
export const IN_FLIGHT_STATUS = 102;

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

/** The stored form of a refusal. */
function storedError(err: AppError): StoredError {
  return { error: err.message, code: err.code, ...(err.details ? { details: err.details } : {}) };
}

/** 422: the key was used for another request (DESIGN §5). */
function mismatch(): AppError {
  return new AppError('idempotency_conflict', 'This Idempotency-Key was already used with a different request', { reason: 'payload_mismatch' }, 422);
}

/** The AppError to answer a refused outcome with, or null for a 2xx outcome. */
export function outcomeError(outcome: IdempotentOutcome): AppError | null {
  if (outcome.status < 400) return null;
  const stored = outcome.body as StoredError;
  return new AppError(stored.code, stored.error, stored.details, outcome.status);
}

function inFlight(): AppError {
  return new AppError('idempotency_conflict', 'A request with this Idempotency-Key is still in progress', { reason: 'in_progress' }, 409, { 'Retry-After': '1' });
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
 * connection held] → advisory lock, read the record (next statement, so its snapshot is after
 * the lock) and, when won, BEGIN and savepoint, in one round trip → `run` → record + COMMIT in
 * one round trip. A storable refusal rolls back to the savepoint and is recorded under the same
 * lock, so no twin can slip between the refusal and its record.
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
  async execute<P, T>(request: IdempotentRequest, work: IdempotentWork<P, T> | RowOwnedWork<unknown>): Promise<IdempotentOutcome> {
    if (isRowOwned(work)) return this.executeRowOwned({ ...request, fingerprint: work.fingerprint }, work);
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
    if (!work.after) return this.locked(request, scopeHash, () => work.run(prepared as P));
    const after = work.after;
    const claimed = await this.locked(request, scopeHash, () => work.run(prepared as P), 'claim');
    if (claimed.replayed || claimed.status >= 400) return claimed;
    return this.finishClaim(request, scopeHash, () => after(claimed.body as T));
  }

  /**
   * Row-owned work (see {@link RowOwnedWork}): the owned row → resumed and answered as a replay;
   * else a recorded refusal → replayed; else prepare, then the row reserved under the key's lock
   * (a refusal recorded there), then resumed with no transaction open. Twins wait for the lock
   * (held only by a short transaction) and resume the row it reserved: no 409 for payments.
   */
  private async executeRowOwned(request: IdempotentRequest, work: RowOwnedWork<unknown>): Promise<IdempotentOutcome> {
    const scopeHash = sha256Hex([request.organizationId, ...request.scope].join('|'));
    const owned = await work.owned();
    if (owned) return this.resumeOwned(owned, request.fingerprint, work, true);
    const finished = await this.records.find(scopeHash, request.key);
    if (finished) return this.replay(finished, request.fingerprint);
    let prepared: unknown;
    if (work.prepare) {
      try {
        prepared = await work.prepare();
      } catch (err) {
        if (!isStorableError(err)) throw err;
        return this.locked(request, scopeHash, () => Promise.reject(err), 'record', true);
      }
    }
    // Waits for a twin's reservation (a short transaction, no network) instead of answering 409:
    // the twin's row is then found under the lock and this call resumes it, as a replay.
    const reserved = await this.locked(request, scopeHash, () => work.reserve(prepared), 'none', true);
    if (reserved.replayed || reserved.status >= 400) return reserved;
    const { row, fingerprint, created } = reserved.body as { row: unknown; fingerprint: string; created: boolean };
    return this.resumeOwned({ row, fingerprint }, request.fingerprint, work, !created);
  }

  private async resumeOwned(owned: { row: unknown; fingerprint: string }, fingerprint: string, work: RowOwnedWork<unknown>, replayed: boolean): Promise<IdempotentOutcome> {
    if (owned.fingerprint !== fingerprint) throw mismatch();
    return { replayed, status: 200, body: await work.resume(owned.row) };
  }

  /** Runs `after` (no transaction open) and replaces the claim with its outcome; an unstorable failure frees the key. */
  private async finishClaim(request: IdempotentRequest, scopeHash: string, after: () => Promise<unknown>): Promise<IdempotentOutcome> {
    const txHost = this.txHost as TxHost;
    const ttl = this.config.env.IDEMPOTENCY_TTL_HOURS;
    let outcome: IdempotentOutcome;
    try {
      outcome = { replayed: false, status: 200, body: await after() };
    } catch (err) {
      if (!isStorableError(err)) {
        await txHost.withTransaction(Propagation.NotSupported, () => this.records.release(scopeHash, request.key));
        throw err;
      }
      outcome = { replayed: false, status: err.status, body: storedError(err) };
    }
    // One statement, autocommit: one round trip instead of BEGIN, UPDATE, COMMIT.
    await txHost.withTransaction(Propagation.NotSupported, () => this.records.finish(scopeHash, request.key, outcome.status, outcome.body, ttl));
    return outcome;
  }

  /**
   * The claim (lock + record read, and BEGIN + savepoint only when won) in one round trip, then
   * `run`; on success: `record` writes the outcome, `claim` an in-flight claim (the outcome comes
   * later, {@link finishClaim}), `none` nothing (row-owned: the row is the record). A storable
   * refusal is always recorded. The record (and a refusal's ROLLBACK TO SAVEPOINT) travels with
   * COMMIT in one message ({@link TxOptions.end}): a first call costs the claim, the work's own
   * statements and that last message; a replay, a 422 or a 409 only the claim (docs/decisions.md,
   * "Idempotency record and COMMIT in one round trip").
   */
  private async locked(request: IdempotentRequest, scopeHash: string, run: () => Promise<unknown>, onSuccess: 'record' | 'claim' | 'none' = 'record', wait = false): Promise<IdempotentOutcome> {
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
    // The savepoint is never released: COMMIT releases it.
    const begin = (connection: RawConnection) => this.records.beginAndClaim(connection, scopeHash, request.key, HANDLER_SAVEPOINT, wait);
    let last: string | undefined;
    try {
      return await txHost.withTransaction(Propagation.RequiresNew, { begin, end: () => last }, async () => {
        let outcome: IdempotentOutcome;
        let refused = false;
        try {
          const body = await run();
          outcome = { replayed: false, status: 200, body };
        } catch (err) {
          if (!isStorableError(err)) throw err;
          refused = true;
          outcome = { replayed: false, status: err.status, body: storedError(err) };
        }
        if (outcome.status < 400 && onSuccess === 'none') return outcome;
        const record =
          outcome.status < 400 && onSuccess === 'claim'
            ? this.records.recordStatement({ ...base, responseStatus: IN_FLIGHT_STATUS, responseBody: null }, CLAIM_LEASE_SECONDS / 3600)
            : this.records.recordStatement({ ...base, responseStatus: outcome.status, responseBody: outcome.body }, ttl);
        last = refused ? `ROLLBACK TO SAVEPOINT ${HANDLER_SAVEPOINT};\n${record}` : record;
        return outcome;
      });
    } catch (err) {
      if (err instanceof BeginDeclined) {
        const { record } = (err as BeginDeclined<{ record: StoredOutcome | null }>).value;
        // A finished record is final whoever holds the lock; a claim in flight, or a twin holding the lock, is 409.
        if (!record) throw inFlight();
        return this.replay(record, request.fingerprint);
      }
      if (last !== undefined && isRecordNotWritten(err)) {
        throw new Error(`idempotency record for key ${request.key} was not written: a live record exists`);
      }
      throw err;
    }
  }

  private replay(record: StoredOutcome, fingerprint: string): IdempotentOutcome {
    if (record.fingerprint !== fingerprint) throw mismatch();
    if (record.responseStatus === IN_FLIGHT_STATUS) throw inFlight();
    return { replayed: true, status: record.responseStatus, body: record.responseBody };
  }
}
