import { Injectable } from '@nestjs/common';
import { TransactionHost, TxHost } from '../../database/transaction';

/** A mandate row with its used amount (sum of its live payments, base units) computed by the query. */
export interface MandateRow {
  id: string;
  agentId: string;
  organizationId: string;
  payees: string[];
  maxAmountPerPayment: bigint;
  totalAmount: bigint;
  usedAmount: bigint;
  expiresAt: Date;
  description: string;
  format: 'eip712' | 'sd-jwt';
  credential: Record<string, unknown>;
  nonce: string;
  revokedAt: Date | null;
  createdAt: Date;
}

/** Payment statuses that count toward a mandate (docs/architecture.md §13: as toward the policy). */
const LIVE = `('pending', 'submitted', 'succeeded')`;
const SELECT = `SELECT m.id, m.agent_id, m.organization_id, m.payees, m.max_amount_per_payment::text, m.total_amount::text,
  (SELECT COALESCE(SUM(p.amount), 0)::text FROM payments p WHERE p.mandate_id = m.id AND p.status IN ${LIVE}) AS used_amount,
  m.expires_at, m.description, m.format, m.credential, m.nonce, m.revoked_at, m.created_at FROM mandates m`;

function toRow(r: Record<string, unknown>): MandateRow {
  return {
    id: r.id as string,
    agentId: r.agent_id as string,
    organizationId: r.organization_id as string,
    payees: r.payees as string[],
    maxAmountPerPayment: BigInt(r.max_amount_per_payment as string),
    totalAmount: BigInt(r.total_amount as string),
    usedAmount: BigInt(r.used_amount as string),
    expiresAt: r.expires_at as Date,
    description: r.description as string,
    format: r.format as MandateRow['format'],
    credential: r.credential as Record<string, unknown>,
    nonce: r.nonce as string,
    revokedAt: (r.revoked_at as Date | null) ?? null,
    createdAt: r.created_at as Date,
  };
}

/** Raw SQL over `mandates` (docs/architecture.md §14); runs in the caller's transaction when there is one. */
@Injectable()
export class MandatesRepository {
  constructor(private readonly txHost: TransactionHost) {}

  private get em() {
    return (this.txHost as TxHost).tx;
  }

  /** @returns false when the agent already used `nonce` (UNIQUE(agent_id, nonce)). */
  async insert(m: Omit<MandateRow, 'usedAmount' | 'revokedAt' | 'createdAt'>): Promise<boolean> {
    const rows: unknown[] = await this.em.query(
      `INSERT INTO mandates (id, agent_id, organization_id, payees, max_amount_per_payment, total_amount, expires_at, description, format, credential, nonce)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT (agent_id, nonce) DO NOTHING RETURNING id`,
      [m.id, m.agentId, m.organizationId, m.payees, m.maxAmountPerPayment.toString(), m.totalAmount.toString(), m.expiresAt, m.description, m.format, JSON.stringify(m.credential), m.nonce],
    );
    return rows.length === 1;
  }

  async find(agentId: string, id: string): Promise<MandateRow | null> {
    const rows: Array<Record<string, unknown>> = await this.em.query(`${SELECT} WHERE m.agent_id = $1 AND m.id = $2`, [agentId, id]);
    return rows.length ? toRow(rows[0]) : null;
  }

  /** Newest first, keyset on (created_at, id) (docs/architecture.md §6); `limit + 1` rows. */
  async list(agentId: string, limit: number, startingAfter?: string): Promise<MandateRow[]> {
    const rows: Array<Record<string, unknown>> = startingAfter
      ? await this.em.query(
          `${SELECT} WHERE m.agent_id = $1 AND (m.created_at, m.id) < (SELECT created_at, id FROM mandates WHERE id = $2 AND agent_id = $1)
           ORDER BY m.created_at DESC, m.id DESC LIMIT $3`,
          [agentId, startingAfter, limit + 1],
        )
      : await this.em.query(`${SELECT} WHERE m.agent_id = $1 ORDER BY m.created_at DESC, m.id DESC LIMIT $2`, [agentId, limit + 1]);
    return rows.map(toRow);
  }

  /**
   * The active mandate covering a payment, the one expiring first: not revoked, not expired at `now`,
   * `payee` (handle or address, any case) in its payees, `amount` ≤ its per-payment maximum and
   * used + amount ≤ its total. Call under the agent row lock, in the reservation's transaction, so
   * the sum is exact (docs/architecture.md §13).
   */
  async covering(agentId: string, payees: string[], amount: bigint, now: Date): Promise<MandateRow | null> {
    const rows: Array<Record<string, unknown>> = await this.em.query(
      `SELECT * FROM (${SELECT} WHERE m.agent_id = $1 AND m.revoked_at IS NULL AND m.expires_at > $4 AND m.max_amount_per_payment >= $3
         AND EXISTS (SELECT 1 FROM unnest(m.payees) AS pe WHERE lower(pe) = ANY ($2::text[]))) c
       WHERE c.total_amount::numeric - c.used_amount::numeric >= $3
       ORDER BY c.expires_at, c.id LIMIT 1`,
      [agentId, payees.map((p) => p.toLowerCase()), amount.toString(), now],
    );
    return rows.length ? toRow(rows[0]) : null;
  }

  /** Revokes a mandate (keeps the first time). @returns false when it does not exist. */
  async revoke(agentId: string, id: string): Promise<boolean> {
    const rows: unknown[] = await this.em.query(
      `WITH u AS (UPDATE mandates SET revoked_at = coalesce(revoked_at, now()) WHERE agent_id = $1 AND id = $2 RETURNING id) SELECT id FROM u`,
      [agentId, id],
    );
    return rows.length === 1;
  }
}
