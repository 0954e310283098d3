import { Injectable } from '@nestjs/common';
import type { AgentRow, PayeeTarget } from './agent.types';
import { AgentsRepository } from './agents.repository';
import { OrgsService } from '../orgs/orgs.service';
import { ChainAccess } from '../../chain/chain-access.service';
import { ChainCursors } from '../../chain/chain-cursors.repository';
import { readSignerBalance, type SignerBalance } from './signer-balance';

/**
 * What spending modules (payments, agent escrows) need from agents, through a service
 * (docs/architecture.md §13): the agent row, the row lock that serialises its reservations, the
 * signer's balance inputs, and payee handle resolution (the usage in the policy windows is the
 * payments module's own sum, its table). Runs in the caller's transaction.
 */
@Injectable()
export class AgentSpendGate {
  constructor(
    private readonly repo: AgentsRepository,
    private readonly chain: ChainAccess,
    private readonly cursors: ChainCursors,
    private readonly orgs: OrgsService,
  ) {}

  find(agentId: string): Promise<AgentRow | null> {
    return this.repo.find(agentId);
  }

  /** The agent under FOR UPDATE; call inside the reservation's transaction. */
  lock(agentId: string): Promise<AgentRow | null> {
    return this.repo.lock(agentId);
  }

  /** The signer's balance inputs for the spend check; call with no transaction open ({@link readSignerBalance}). */
  signerBalance(signer: string): Promise<SignerBalance> {
    return readSignerBalance(this.chain, this.cursors, signer);
  }

  /**
   * A payee handle (organisation handle or agent slug, case-insensitive), or null; an organisation's
   * payout address comes from OrgsService (the `organizations` table is the orgs module's).
   */
  async resolveHandle(handle: string): Promise<PayeeTarget | null> {
    const hit = await this.repo.resolveHandle(handle);
    if (!hit || hit.kind === 'agent') return hit;
    const org = await this.orgs.getOrganization(hit.organizationId);
    return org ? { kind: 'organization', id: org.id, organizationId: org.id, handle: hit.handle, address: org.payoutAddress ?? null } : null;
  }
}
