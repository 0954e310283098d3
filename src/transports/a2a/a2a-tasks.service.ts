import { Inject, Injectable, Logger } from '@nestjs/common';
import { Task, taskStateToJSON, type ListTasksRequest, type ListTasksResponse } from '@a2a-js/sdk';
import { TaskNotCancelableError } from '@a2a-js/sdk/errors';
import type { ServerCallContext, TaskStore, User } from '@a2a-js/sdk/server';
import type Redis from 'ioredis';
import type { Principal } from '../../kernel/auth/principal';
import { REDIS } from '../../common/redis/redis.module';
import { AppConfig } from '../../config/app-config';
import { PaymentsService } from '../../modules/payments/payments.service';
import { ChainAccess } from '../../chain/chain-access.service';
import { paymentStatus, TERMINAL_STATES } from './a2a-task-status';
import { A2aTasksRepository } from './a2a-tasks.repository';

/** Seconds a task's JSON stays in the Redis cache (24 h; Postgres stays the truth). */
export const TASK_CACHE_SECONDS = 24 * 3600;

/** The SDK `User` of an authenticated call: our principal, named by its owner scope. */
export class PrincipalUser implements User {
  constructor(readonly principal: Principal) {}
  get isAuthenticated(): boolean {
    return true;
  }
  get userName(): string {
    return ownerOf(this.principal);
  }
}

/** Whose tasks these are: organisation + credential actor (`merchant`, `agent:<id>`, `oauth:<client>`). */
export function ownerOf(p: Principal): string {
  return `${p.organizationId}:${p.actor}`;
}

/** The principal behind an SDK call context. @throws Error for an unauthenticated context (the route requires a credential). */
export function principalOf(context: ServerCallContext): Principal {
  const user = context.user;
  if (!(user instanceof PrincipalUser)) throw new Error('A2A call without an authenticated principal');
  return user.principal;
}

/**
 * A2A tasks in Postgres (`a2a_tasks`, the truth) with a Redis copy for 24 h (docs/architecture.md
 * §14). Tasks are per owner ({@link ownerOf}). Reading a task whose payment was still in flight
 * re-reads the payment and moves the task to completed or failed once it settled (the a2a-x402
 * final states). Task JSON is the v1.0 wire form of @a2a-js/sdk's `Task`.
 */
@Injectable()
export class A2aTasksService {
  private readonly logger = new Logger('A2aTasks');

  constructor(
    private readonly repo: A2aTasksRepository,
    private readonly payments: PaymentsService,
    private readonly chain: ChainAccess,
    private readonly config: AppConfig,
    @Inject(REDIS) private readonly redis: Redis,
  ) {}

  /**
   * Stores the task (Postgres, then the Redis copy). A task whose payment exists may not become
   * canceled: the payment moves on regardless.
   * @throws TaskNotCancelableError (A2A -32002) for that cancel.
   */
  async save(principal: Principal, task: Task): Promise<void> {
    const json = Task.toJSON(task) as Record<string, unknown> & { status?: { state?: string } };
    const state = json.status?.state ?? 'TASK_STATE_SUBMITTED';
    const owner = ownerOf(principal);
    if (state === 'TASK_STATE_CANCELED') {
      const stored = await this.repo.find(owner, task.id);
      if ((stored?.task.metadata as { paymentId?: string } | undefined)?.paymentId) {
        throw new TaskNotCancelableError(`Task ${task.id} has a payment in flight and cannot be canceled`);
      }
    }
    await this.saveJson(principal, json, state);
  }

  /** Stores v1.0 task JSON as is (payment-submitted builds it directly). */
  async saveJson(principal: Principal, json: Record<string, unknown>, state = (json.status as { state?: string } | undefined)?.state ?? 'TASK_STATE_SUBMITTED'): Promise<void> {
    const owner = ownerOf(principal);
    const id = String(json.id);
    await this.repo.upsert({ owner, id, organizationId: principal.organizationId, agentId: principal.agentId, contextId: typeof json.contextId === 'string' ? json.contextId : id, state, task: json });
    await this.redis.set(this.cacheKey(owner, id), JSON.stringify(json), 'EX', TASK_CACHE_SECONDS).catch((err: Error) => this.logger.warn({ taskId: id, error: err.message }, 'task cache write failed'));
  }

  /** The task's v1.0 JSON, or null: a terminal task from the Redis copy, anything else from Postgres (refreshed). */
  async loadJson(principal: Principal, id: string): Promise<Record<string, unknown> | null> {
    const owner = ownerOf(principal);
    const cached = await this.redis.get(this.cacheKey(owner, id)).catch(() => null);
    if (cached) {
      const json = JSON.parse(cached) as Record<string, unknown> & { status?: { state?: string } };
      if (TERMINAL_STATES.has(json.status?.state ?? '')) return json;
    }
    const row = await this.repo.find(owner, id);
    if (!row) return null;
    return this.refresh(principal, row.task);
  }

  /** The task for the SDK, or undefined. */
  async load(principal: Principal, id: string): Promise<Task | undefined> {
    const json = await this.loadJson(principal, id);
    return json ? Task.fromJSON(json) : undefined;
  }

  /** ListTasks: the owner's tasks, newest update first; `pageToken` is an offset (decimal text). */
  async list(principal: Principal, params: ListTasksRequest): Promise<ListTasksResponse> {
    const limit = Math.min(Math.max(params.pageSize ?? 50, 1), 100);
    const offset = /^\d{1,9}$/.test(params.pageToken ?? '') ? Number(params.pageToken) : 0;
    const state = params.status ? taskStateToJSON(params.status) : undefined;
    const { rows, total } = await this.repo.list(ownerOf(principal), { contextId: params.contextId || undefined, state, limit, offset, updatedAfter: params.statusTimestampAfter });
    const tasks = rows.map((r) => Task.fromJSON(r.task));
    if (params.includeArtifacts !== true) for (const t of tasks) t.artifacts = [];
    return { tasks, nextPageToken: offset + rows.length < total ? String(offset + rows.length) : '', pageSize: limit, totalSize: total };
  }

  /** A working task whose payment has settled since: its final status, appended to its history and stored. */
  private async refresh(principal: Principal, json: Record<string, unknown>): Promise<Record<string, unknown>> {
    const paymentId = (json.metadata as { paymentId?: string } | undefined)?.paymentId;
    const state = (json.status as { state?: string } | undefined)?.state;
    if (!paymentId || state !== 'TASK_STATE_WORKING' || !principal.agentId) return json;
    const payment = await this.payments.findForAgent(principal.agentId, paymentId);
    if (!payment || (payment.status !== 'succeeded' && payment.status !== 'failed')) return json;
    const next = paymentStatus(String(json.id), String(json.contextId), this.payments.toDto(payment), this.chain.chainId, payment.fromAddress);
    const updated = { ...json, status: next, history: [...((json.history as unknown[] | undefined) ?? []), next.message] };
    await this.saveJson(principal, updated, next.state);
    return updated;
  }

  private cacheKey(owner: string, id: string): string {
    return `${this.config.env.REDIS_PREFIX}:a2a:task:${owner}:${id}`;
  }
}

/** The SDK's TaskStore over {@link A2aTasksService} (Postgres, not the SDK's in-memory store). */
export class PostgresTaskStore implements TaskStore {
  constructor(private readonly tasks: A2aTasksService) {}

  save(task: Task, context: ServerCallContext): Promise<void> {
    return this.tasks.save(principalOf(context), task);
  }

  load(taskId: string, context: ServerCallContext): Promise<Task | undefined> {
    return this.tasks.load(principalOf(context), taskId);
  }

  list(params: ListTasksRequest, context: ServerCallContext): Promise<ListTasksResponse> {
    return this.tasks.list(principalOf(context), params);
  }
}
