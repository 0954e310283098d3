import { Injectable } from '@nestjs/common';
import { keysetPage } from '../../common/http/keyset';
import { TransactionHost, TxHost } from '../../database/transaction';
import { Mandate } from './mandate.entity';

/** The agent fields a mandate is checked against. */
export interface MandateAgent {
  id: string;
  slug: string;
  ownerAddress: string;
  organizationId: string;
}

/** Postgres I/O of mandates (docs/architecture.md, Conventions 4); every call runs in the caller's transaction. */
@Injectable()
export class MandatesRepository {
  constructor(private readonly txHost: TransactionHost) {}

  private get em() {
    return (this.txHost as TxHost).tx;
  }

  /** Inserts the mandate; false when its nonce was used before for this agent (UNIQUE(agent_id, nonce)). */
  async insert(m: Mandate): Promise<boolean> {
    const rows: unknown[] = await this.em.query(
      `INSERT INTO mandates (id, agent_id, organization_id, payees, max_amount_per_payment, total_amount, expires_at, description, format, nonce, credential, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12)
       ON CONFLICT (agent_id, nonce) DO NOTHING RETURNING id`,
      [m.id, m.agentId, m.organizationId, m.payees, m.maxAmountPerPayment.toString(), m.totalAmount.toString(), m.expiresAt, m.description, m.format, m.nonce, JSON.stringify(m.credential), m.createdAt],
    );
    return rows.length === 1;
  }

  findById(id: string): Promise<Mandate | null> {
    return this.em.getRepository(Mandate).findOneBy({ id });
  }

  /** The row under FOR UPDATE (revocation). */
  lock(id: string): Promise<Mandate | null> {
    return this.em.getRepository(Mandate).createQueryBuilder('m').where('m.id = :id', { id }).setLock('pessimistic_write').getOne();
  }

  async revoke(id: string, at: Date): Promise<void> {
    await this.em.query(`UPDATE mandates SET revoked_at = $2, updated_at = $2 WHERE id = $1 AND revoked_at IS NULL`, [id, at]);
  }

  /** An agent's mandates newest first (keyset on created_at, id). */
  list(agentId: string, limit: number, startingAfter?: string): Promise<Mandate[]> {
    return keysetPage(() => this.em.getRepository(Mandate).createQueryBuilder('m'), 'm', { sql: 'm.agent_id = :agentId', params: { agentId } }, limit, startingAfter);
  }

  /**
   * The active mandates of `agentId` that may cover a payment of `amount` to the payee (docs/architecture.md
   * §14): not revoked, expiring after `now`, `payees` holding the payee's handle or address (both
   * lower-case), `amount` ≤ max per payment; expiring first first, with their totals (base units).
   * Each is locked FOR SHARE until the spend commits: a revocation ({@link lock} FOR UPDATE) waits for
   * it, and a read that meets a revocation in flight waits and then leaves the revoked mandate out, so no
   * spend is admitted under a mandate after its revocation committed (issue 22, finding 8). The usage
   * check (total ≥ used + amount) is the caller's, with the payments module's sums (issue 31).
   */
  async coveringCandidates(agentId: string, handle: string, address: string, amount: bigint, now: Date): Promise<Array<{ id: string; totalAmount: bigint }>> {
    const rows: Array<{ id: string; total_amount: string }> = await this.em.query(
      `SELECT m.id, m.total_amount::text AS total_amount FROM mandates m
        WHERE m.agent_id = $1 AND m.revoked_at IS NULL AND m.expires_at > $2
          AND ($3 = ANY(m.payees) OR $4 = ANY(m.payees))
          AND m.max_amount_per_payment >= $5::numeric
          AND m.total_amount >= $5::numeric
        ORDER BY m.expires_at ASC, m.id ASC
        FOR SHARE OF m`,
      [agentId, now, handle.toLowerCase(), address.toLowerCase(), amount.toString()],
    );
    return rows.map((r) => ({ id: r.id, totalAmount: BigInt(r.total_amount) }));
  }
}
