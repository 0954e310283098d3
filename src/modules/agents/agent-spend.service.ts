import { Injectable } from '@nestjs/common';
import { TransactionHost, TxHost } from '../../database/transaction';
import type { AgentRow, AgentUsage, PayeeTarget } from './agent.types';
import { agentUsage, AgentsRepository } from './agents.repository';

/**
 * What spending modules (payments, agent escrows) need from agents, through a service
 * (docs/architecture.md §13): the agent row, the row lock that serialises its reservations, its usage in
 * the policy windows, and payee handle resolution. Runs in the caller's transaction.
 */
@Injectable()
export class AgentSpendGate {
  constructor(
    private readonly repo: AgentsRepository,
    private readonly txHost: TransactionHost,
  ) {}

  find(agentId: string): Promise<AgentRow | null> {
    return this.repo.find(agentId);
  }

  /** The agent under FOR UPDATE; call inside the reservation's transaction. */
  lock(agentId: string): Promise<AgentRow | null> {
    return this.repo.lock(agentId);
  }

  /** Payments pending/submitted/succeeded since the window starts (base units), and the open reservations. */
  usage(agentId: string, dayStart: Date, monthStart: Date): Promise<AgentUsage> {
    return agentUsage((this.txHost as TxHost).tx, agentId, dayStart, monthStart);
  }

  /** A payee handle (organisation handle or agent slug, case-insensitive), or null. */
  resolveHandle(handle: string): Promise<PayeeTarget | null> {
    return this.repo.resolveHandle(handle);
  }
}
