import { Injectable } from '@nestjs/common';
import { AgentDirectory, type AgentRef } from '../orgs/agent-directory.port';
import { AgentsRepository } from './agents.repository';

/** The agents module's side of orgs' {@link AgentDirectory} port: reads of the `agents` table orgs needs (issue 31). In the caller's transaction, if any. */
@Injectable()
export class AgentsDirectory extends AgentDirectory {
  constructor(private readonly repo: AgentsRepository) {
    super();
  }

  async agentRef(id: string): Promise<AgentRef | null> {
    const a = await this.repo.find(id);
    return a ? { id: a.id, organizationId: a.organizationId, slug: a.slug, ownerAddress: a.ownerAddress } : null;
  }

  async ownedBy(address: string): Promise<AgentRef[]> {
    return (await this.repo.ownedBy(address)).map((a) => ({ id: a.id, organizationId: a.organizationId, slug: a.slug, ownerAddress: a.ownerAddress }));
  }
}
