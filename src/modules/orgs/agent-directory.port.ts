/** An agent as the organisation's credentials and owners see it (DESIGN §13). */
export interface AgentRef {
  id: string;
  organizationId: string;
  slug: string;
  ownerAddress: string;
}

/**
 * Port through which orgs reads agents (an agent key's agent, the agents an owner address manages);
 * the agents module implements it, since the `agents` table is its own and it depends on orgs, so
 * orgs cannot import it back (the same pattern as {@link VerificationSnapshotSource}; issue 31).
 */
export abstract class AgentDirectory {
  /** The agent `id`, or null. */
  abstract agentRef(id: string): Promise<AgentRef | null>;
  /** The agents whose owner address is `address` (case-insensitive), oldest first. */
  abstract ownedBy(address: string): Promise<AgentRef[]>;
}
