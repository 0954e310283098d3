import { Injectable } from '@nestjs/common';
import { TransactionHost, TxHost } from '../../database/transaction';
import type { StoredPolicy } from './agent-policy';
import type { AgentRow, PayeeTarget } from './agent.types';

export type { AgentRow, AgentUsage, PayeeTarget } from './agent.types';

const COLUMNS = `id, organization_id, slug, name, owner_address, paused, signer_enabled, signer_address, policy, created_at, updated_at`;

function toRow(r: Record<string, unknown>): AgentRow {
  return {
    id: r.id as string,
    organizationId: r.organization_id as string,
    slug: r.slug as string,
    name: (r.name as string | null) ?? null,
    ownerAddress: r.owner_address as string,
    paused: r.paused as boolean,
    signerEnabled: r.signer_enabled as boolean,
    signerAddress: (r.signer_address as string | null) ?? null,
    policy: (r.policy as StoredPolicy | null) ?? null,
    createdAt: r.created_at as Date,
    updatedAt: r.updated_at as Date,
  };
}

/** Postgres I/O of agents, payee handles and owner signature nonces (docs/architecture.md, Conventions 4); runs in the caller's transaction. */
@Injectable()
export class AgentsRepository {
  constructor(private readonly txHost: TransactionHost) {}

  private get em() {
    return (this.txHost as TxHost).tx;
  }

  /** Inserts a new agent: not paused, signer disabled, no policy. @throws the driver's 23505 when the slug is taken. */
  async insert(agent: { id: string; organizationId: string; slug: string; ownerAddress: string }): Promise<void> {
    await this.em.query(`INSERT INTO agents (id, organization_id, slug, owner_address, paused, signer_enabled) VALUES ($1, $2, $3, $4, false, false)`, [
      agent.id,
      agent.organizationId,
      agent.slug,
      agent.ownerAddress,
    ]);
  }

  async find(id: string): Promise<AgentRow | null> {
    const rows: Array<Record<string, unknown>> = await this.em.query(`SELECT ${COLUMNS} FROM agents WHERE id = $1`, [id]);
    return rows[0] ? toRow(rows[0]) : null;
  }

  /** The organisation's agents, oldest first. */
  async listByOrganization(organizationId: string): Promise<AgentRow[]> {
    const rows: Array<Record<string, unknown>> = await this.em.query(`SELECT ${COLUMNS} FROM agents WHERE organization_id = $1 ORDER BY created_at, id`, [organizationId]);
    return rows.map(toRow);
  }

  /** Agents whose owner address is `address` (case-insensitive), oldest first. */
  async ownedBy(address: string): Promise<AgentRow[]> {
    const rows: Array<Record<string, unknown>> = await this.em.query(`SELECT ${COLUMNS} FROM agents WHERE lower(owner_address) = lower($1) ORDER BY created_at, id`, [address]);
    return rows.map(toRow);
  }

  /** The agent row under FOR UPDATE: serialises every reservation of this agent (docs/architecture.md §13). */
  async lock(id: string): Promise<AgentRow | null> {
    const rows: Array<Record<string, unknown>> = await this.em.query(`SELECT ${COLUMNS} FROM agents WHERE id = $1 FOR UPDATE`, [id]);
    return rows[0] ? toRow(rows[0]) : null;
  }

  async sealedKey(id: string): Promise<string | null> {
    const rows: Array<{ signer_key_sealed: string | null }> = await this.em.query(`SELECT signer_key_sealed FROM agents WHERE id = $1`, [id]);
    return rows[0]?.signer_key_sealed ?? null;
  }

  async setSigner(id: string, address: string, sealed: string, name: string | null): Promise<void> {
    await this.em.query(`UPDATE agents SET signer_address = $2, signer_key_sealed = $3, name = COALESCE($4, name), updated_at = now() WHERE id = $1`, [id, address, sealed, name]);
  }

  async setPolicy(id: string, policy: StoredPolicy): Promise<void> {
    await this.em.query(`UPDATE agents SET policy = $2, updated_at = now() WHERE id = $1`, [id, JSON.stringify(policy)]);
  }

  async setPaused(id: string, paused: boolean): Promise<void> {
    await this.em.query(`UPDATE agents SET paused = $2, updated_at = now() WHERE id = $1`, [id, paused]);
  }

  async setSignerEnabled(id: string, enabled: boolean): Promise<void> {
    await this.em.query(`UPDATE agents SET signer_enabled = $2, updated_at = now() WHERE id = $1`, [id, enabled]);
  }

  /** Records an owner signature nonce; false when it was used before (single use: raw `ON CONFLICT DO NOTHING RETURNING` decides it in one statement). */
  async useOwnerNonce(agentId: string, nonce: string, purpose: string): Promise<boolean> {
    const rows: unknown[] = await this.em.query(
      `INSERT INTO agent_owner_nonces (agent_id, nonce, purpose) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING nonce`,
      [agentId, nonce.toLowerCase(), purpose],
    );
    return rows.length === 1;
  }

  /**
   * Resolves a payee handle (case-insensitive) in the one namespace of organisation handles and agent
   * slugs (`payee_handles`, kept by the database's trigger): an agent with its signer address, or the
   * organisation's id alone (its payout address is the orgs module's, read through OrgsService).
   */
  async resolveHandle(handle: string): Promise<PayeeTarget | { kind: 'organization'; handle: string; organizationId: string } | null> {
    const rows: Array<Record<string, unknown>> = await this.em.query(
      `SELECT h.handle, h.organization_id AS org_id, a.id AS agent_id, a.organization_id AS agent_org, a.signer_address
         FROM payee_handles h
         LEFT JOIN agents a ON a.id = h.agent_id
        WHERE h.handle = lower($1)`,
      [handle],
    );
    const r = rows[0];
    if (!r) return null;
    if (r.org_id) return { kind: 'organization', handle: r.handle as string, organizationId: r.org_id as string };
    return { kind: 'agent', id: r.agent_id as string, organizationId: r.agent_org as string, handle: r.handle as string, address: (r.signer_address as string | null) ?? null };
  }
}
