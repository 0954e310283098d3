import type { AgentUsage } from './agent.types';

/**
 * Port through which agents reads an agent's usage in its policy windows (GET /agent, its balance):
 * the sums are over the `payments` table, which the payments module owns and which depends on agents,
 * so agents cannot import it back (issue 31; the same pattern as orgs' VerificationSnapshotSource).
 * The payments module implements it.
 */
export abstract class AgentUsageSource {
  /**
   * Payments in status pending, submitted or succeeded created since `dayStart` / `monthStart`
   * (docs/architecture.md §13), and the open reservations (pending or submitted, and succeeded ones
   * recorded as used above `trustedBlock`, which a reorg may have undone: DESIGN §22), leaving out
   * those whose authorization nonce is in `settledNonces`. Amounts in base units. In the caller's
   * transaction, if any (under the agent row lock when the answer decides a reservation).
   */
  abstract usage(agentId: string, dayStart: Date, monthStart: Date, settledNonces?: string[], trustedBlock?: number | null): Promise<AgentUsage>;
}
