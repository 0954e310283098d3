import { Injectable } from '@nestjs/common';
import type { Principal } from '../../common/auth/principal';
import { AppError } from '../../common/errors/app-error';
import { sha256Hex } from '../../common/idempotency/fingerprint';
import { IdempotencyRepository } from '../../common/idempotency/idempotency.repository';
import { isStorableError } from '../../common/idempotency/idempotency.interceptor';
import { AppConfig } from '../../config/app-config';
import { Propagation, TransactionHost, TxHost } from '../../database/transaction';

/** One tool call under an idempotency key. */
export interface ToolCallKey {
  principal: Principal;
  toolName: string;
  key: string;
  /** SHA-256 of the canonical JSON arguments, without the key. */
  fingerprint: string;
}

/**
 * Idempotency for MCP tools: the REST store and rules (docs/architecture.md §5), keyed by
 * organisation, principal and tool name. Same key and arguments → the first outcome again; other
 * arguments → 422 idempotency_conflict; while the first call runs → 409. The record commits in
 * the tool's own transaction, so an effect never exists without its record.
 */
@Injectable()
export class McpIdempotency {
  constructor(
    private readonly txHost: TransactionHost,
    private readonly records: IdempotencyRepository,
    private readonly config: AppConfig,
  ) {}

  /**
   * Runs `fn` once per key: inside one transaction that holds the key's lock, reads the record
   * (after the lock, in its own statement), runs `fn` and writes the outcome.
   * @throws AppError idempotency_conflict (409 in flight, 422 other arguments); the stored refusal again on a replay.
   */
  async run(call: ToolCallKey, fn: () => Promise<unknown>): Promise<unknown> {
    const scopeHash = sha256Hex([call.principal.organizationId, call.principal.actor, 'MCP', call.toolName].join('|'));
    const base = { scopeHash, idempotencyKey: call.key, organizationId: call.principal.organizationId, method: 'MCP', path: call.toolName, fingerprint: call.fingerprint };
    const ttl = this.config.env.IDEMPOTENCY_TTL_HOURS;
    const outcome = await (this.txHost as TxHost).withTransaction(Propagation.RequiresNew, async () => {
      const { locked, record } = await this.records.lockAndFind(scopeHash, call.key);
      if (!locked) throw new AppError('idempotency_conflict', 'A call with this idempotencyKey is still in progress', { reason: 'in_progress' }, 409, { 'Retry-After': '1' });
      if (record) {
        if (record.fingerprint !== call.fingerprint) {
          throw new AppError('idempotency_conflict', 'This idempotencyKey was already used with different arguments', { reason: 'payload_mismatch' }, 422);
        }
        return { status: record.responseStatus, body: record.responseBody };
      }
      try {
        // A savepoint: a refusal's writes roll back, and the refusal is recorded in the locked transaction.
        const body = await (this.txHost as TxHost).withTransaction(Propagation.Nested, fn);
        await this.records.insert({ ...base, responseStatus: 200, responseBody: body ?? null }, ttl);
        return { status: 200, body };
      } catch (err) {
        if (!isStorableError(err)) throw err;
        const stored = { error: err.message, code: err.code, ...(err.details ? { details: err.details } : {}) };
        await this.records.insert({ ...base, responseStatus: err.status, responseBody: stored }, ttl);
        return { status: err.status, body: stored as unknown };
      }
    });
    if (outcome.status >= 400) {
      const stored = outcome.body as { error: string; code: AppError['code']; details?: Record<string, unknown> };
      throw new AppError(stored.code, stored.error, stored.details, outcome.status);
    }
    return outcome.body;
  }
}
