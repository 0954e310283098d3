import { Injectable } from '@nestjs/common';
import { TransactionHost, TxHost } from '../../database/transaction';

/** One stored A2A task: the v1.0 task JSON and who owns it. */
export interface A2aTaskRow {
  owner: string;
  id: string;
  organizationId: string;
  agentId: string | null;
  contextId: string;
  state: string;
  task: Record<string, unknown>;
}

/** Postgres I/O of the A2A task store (`a2a_tasks`, keyed by owner and task id); raw SQL, single statements. */
@Injectable()
export class A2aTasksRepository {
  constructor(private readonly txHost: TransactionHost) {}

  private get em() {
    return (this.txHost as TxHost).tx;
  }

  /** Inserts or replaces the task of (owner, id). */
  async upsert(row: A2aTaskRow): Promise<void> {
    await this.em.query(
      `INSERT INTO a2a_tasks (owner, id, organization_id, agent_id, context_id, state, task)
       VALUES ($1, $2, $3, $4, $5, $6, $7)
       ON CONFLICT (owner, id) DO UPDATE SET context_id = EXCLUDED.context_id, state = EXCLUDED.state, task = EXCLUDED.task, updated_at = now()`,
      [row.owner, row.id, row.organizationId, row.agentId, row.contextId, row.state, JSON.stringify(row.task)],
    );
  }

  async find(owner: string, id: string): Promise<A2aTaskRow | null> {
    const rows: RawRow[] = await this.em.query(`SELECT * FROM a2a_tasks WHERE owner = $1 AND id = $2`, [owner, id]);
    return rows[0] ? toRow(rows[0]) : null;
  }

  /** The owner's tasks, most recently updated first; `offset` rows skipped (ListTasks page token). */
  async list(owner: string, q: { contextId?: string; state?: string; limit: number; offset: number; updatedAfter?: string }): Promise<{ rows: A2aTaskRow[]; total: number }> {
    const where = ['owner = $1'];
    const params: unknown[] = [owner];
    if (q.contextId) where.push(`context_id = $${params.push(q.contextId)}`);
    if (q.state) where.push(`state = $${params.push(q.state)}`);
    if (q.updatedAfter) where.push(`updated_at > $${params.push(q.updatedAfter)}`);
    const sql = where.join(' AND ');
    const [{ count }]: Array<{ count: string }> = await this.em.query(`SELECT count(*)::text AS count FROM a2a_tasks WHERE ${sql}`, params);
    const rows: RawRow[] = await this.em.query(
      `SELECT * FROM a2a_tasks WHERE ${sql} ORDER BY updated_at DESC, id DESC LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
      [...params, q.limit, q.offset],
    );
    return { rows: rows.map(toRow), total: Number(count) };
  }
}

interface RawRow {
  owner: string;
  id: string;
  organization_id: string;
  agent_id: string | null;
  context_id: string;
  state: string;
  task: Record<string, unknown>;
}

function toRow(r: RawRow): A2aTaskRow {
  return { owner: r.owner, id: r.id, organizationId: r.organization_id, agentId: r.agent_id, contextId: r.context_id, state: r.state, task: r.task };
}
