import { Injectable } from '@nestjs/common';
import { type FindOptionsWhere, Raw } from 'typeorm';
import { TransactionHost, TxHost } from '../../database/transaction';
import { A2aTask } from './a2a-task.entity';

/** One stored A2A task: the v1.0 task JSON and who owns it (an {@link A2aTask} without its timestamps). */
export type A2aTaskRow = Omit<A2aTask, 'createdAt' | 'updatedAt'>;

/** Postgres I/O of the A2A task store (`a2a_tasks`, keyed by owner and task id); single statements. */
@Injectable()
export class A2aTasksRepository {
  constructor(private readonly txHost: TransactionHost) {}

  private get em() {
    return (this.txHost as TxHost).tx;
  }

  /**
   * Inserts or replaces the task of (owner, id). Raw on purpose: one `INSERT … ON CONFLICT DO UPDATE`
   * that keeps the row's organisation, agent and created_at and moves only what a task update changes.
   */
  async upsert(row: A2aTaskRow): Promise<void> {
    await this.em.query(
      `INSERT INTO a2a_tasks (owner, id, organization_id, agent_id, context_id, state, task)
       VALUES ($1, $2, $3, $4, $5, $6, $7)
       ON CONFLICT (owner, id) DO UPDATE SET context_id = EXCLUDED.context_id, state = EXCLUDED.state, task = EXCLUDED.task, updated_at = now()`,
      [row.owner, row.id, row.organizationId, row.agentId, row.contextId, row.state, JSON.stringify(row.task)],
    );
  }

  find(owner: string, id: string): Promise<A2aTask | null> {
    return this.em.getRepository(A2aTask).findOneBy({ owner, id });
  }

  /** The owner's tasks, most recently updated first; `offset` rows skipped (ListTasks page token). */
  async list(owner: string, q: { contextId?: string; state?: string; limit: number; offset: number; updatedAfter?: string }): Promise<{ rows: A2aTask[]; total: number }> {
    const where: FindOptionsWhere<A2aTask> = { owner };
    if (q.contextId) where.contextId = q.contextId;
    if (q.state) where.state = q.state;
    // Compared by Postgres as given (timestamptz text), as the A2A client sent it.
    if (q.updatedAfter) where.updatedAt = Raw((column) => `${column} > :after`, { after: q.updatedAfter });
    const [rows, total] = await this.em.getRepository(A2aTask).findAndCount({
      where,
      order: { updatedAt: 'DESC', id: 'DESC' },
      take: q.limit,
      skip: q.offset,
    });
    return { rows, total };
  }
}
